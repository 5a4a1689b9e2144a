import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  createRejectionSummariser,
  isRejection,
  MAX_SUMMARY_KEYS,
  systemSummaryTiming,
  UNTRACKED_KEY,
  type RejectionKey,
  type RejectionSummariserOptions,
  type SummaryTimers,
} from '../../src/http/rejection-summariser.js';
import { createFakeTime, type FakeTime } from '../support/fake-time.js';

/*
 * The rejection summariser on a hand-driven clock: the first rejection of a key in an interval is
 * logged, the rest are counted, and one summary per key says how many when the interval ends —
 * on its timer, on the next rejection after it, or at close.
 */

const INTERVAL = 60_000;
const unauthorized: RejectionKey = { method: 'GET', route: '/v1/provider-catalog', status: 401, code: 'unauthorized' };
const notFound: RejectionKey = { method: 'GET', route: 'unmatched', status: 404, code: 'not_found' };

function summariser(time: FakeTime, options: Partial<RejectionSummariserOptions> = {}, timers: SummaryTimers = time.timers) {
  const written: Record<string, unknown>[] = [];
  const it = createRejectionSummariser({
    event: 'http_rejections_repeated',
    timing: { intervalMs: INTERVAL, clock: time.clock, timers },
    write: (summary) => written.push(summary),
    ...options,
  });
  return { it, written };
}

const iso = (ms: number) => new Date(ms).toISOString();
/** A summary without its times: event, key fields, count and interval. */
const untimed = (summary: Record<string, unknown>) => Object.fromEntries(Object.entries(summary).filter(([name]) => name !== 'first_at' && name !== 'last_at'));
/** The key a summary counts for. */
const keyOf = (summary: Record<string, unknown>) =>
  JSON.stringify(Object.entries(summary).filter(([name]) => !['event', 'count', 'first_at', 'last_at', 'interval_ms'].includes(name)));
/** A timer port whose timers never fire: only a later rejection or close can end a window. */
const silentTimers: SummaryTimers = { setTimeout: () => 0, clearTimeout: () => undefined };

describe('rejection summariser', () => {
  it('logs the first rejection of a key, counts the rest and writes one summary when the interval ends on its timer', async () => {
    const time = createFakeTime();
    const start = time.clock.now();
    const { it: rejections, written } = summariser(time);
    expect(time.pending()).toBe(0);
    expect(rejections.observe(unauthorized)).toBe('log');
    expect(time.pendingDelays()).toEqual([INTERVAL]);
    await time.advance(1_000);
    for (let index = 0; index < 5; index += 1) expect(rejections.observe(unauthorized)).toBe('counted');
    await time.advance(20_000);
    expect(rejections.observe(unauthorized)).toBe('counted');
    expect(written).toEqual([]);

    await time.advance(INTERVAL - 21_000);
    expect(written).toEqual([
      { event: 'http_rejections_repeated', ...unauthorized, count: 6, first_at: iso(start + 1_000), last_at: iso(start + 21_000), interval_ms: INTERVAL },
    ]);
    // The window is over and nothing is left to summarise: no timer keeps running.
    expect(time.pending()).toBe(0);
    expect(rejections.observe(unauthorized)).toBe('log');
  });

  it('writes nothing for a key seen once in its interval', async () => {
    const time = createFakeTime();
    const { it: rejections, written } = summariser(time);
    expect(rejections.observe(unauthorized)).toBe('log');
    await time.advance(INTERVAL * 3);
    expect(written).toEqual([]);
    expect(time.pending()).toBe(0);
  });

  it('ends an interval on the next rejection after it, before deciding about that rejection', async () => {
    const time = createFakeTime();
    const start = time.clock.now();
    const { it: rejections, written } = summariser(time, {}, silentTimers);
    rejections.observe(unauthorized);
    rejections.observe(unauthorized);
    rejections.observe(notFound);
    await time.advance(INTERVAL);
    expect(written).toEqual([]);
    // Any key's rejection ends every interval that is over; this one opens a new interval.
    expect(rejections.observe(notFound)).toBe('log');
    expect(written).toEqual([{ event: 'http_rejections_repeated', ...unauthorized, count: 1, first_at: iso(start), last_at: iso(start), interval_ms: INTERVAL }]);
  });

  it('keeps each key apart: a flood of one key never hides the first rejection of another', () => {
    const time = createFakeTime();
    const { it: rejections, written } = summariser(time);
    expect(rejections.observe(unauthorized)).toBe('log');
    for (let index = 0; index < 1_000; index += 1) rejections.observe(unauthorized);
    expect(rejections.observe(notFound)).toBe('log');
    expect(rejections.observe({ ...notFound, method: 'POST' })).toBe('log');
    expect(rejections.observe(notFound)).toBe('counted');
    rejections.close();
    expect(written.map((summary) => [summary.method, summary.status, summary.count])).toEqual([
      ['GET', 401, 1_000],
      ['GET', 404, 1],
    ]);
  });

  it('at close writes every pending summary, stops its timer, and logs every later rejection', () => {
    const time = createFakeTime();
    const { it: rejections, written } = summariser(time);
    rejections.observe(unauthorized);
    rejections.observe(unauthorized);
    rejections.observe(notFound);
    expect(time.pending()).toBe(1);
    rejections.close();
    expect(time.pending()).toBe(0);
    expect(written.map((summary) => summary.count)).toEqual([1]);
    expect(rejections.observe(unauthorized)).toBe('log');
    expect(rejections.observe(unauthorized)).toBe('log');
    rejections.close();
    expect(written).toHaveLength(1);
  });

  it('bounds the lines a varied flood writes: with the default cap, 300 keys over ten intervals cost at most 2 x 33 lines an interval', async () => {
    const time = createFakeTime();
    const { it: rejections, written } = summariser(time);
    const methods = ['GET', 'POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS', 'HEAD', 'PROPFIND', 'MKCOL', 'LOCK'];
    let sent = 0;
    let logged = 0;
    for (let interval = 0; interval < 10; interval += 1) {
      const before = written.length;
      let loggedNow = 0;
      for (let round = 0; round < 5; round += 1) {
        for (let k = 0; k < 300; k += 1) {
          const key = { method: methods[k % methods.length] ?? 'GET', route: `/route-${Math.floor(k / methods.length)}`, status: 401, code: 'unauthorized' };
          if (rejections.observe(key) === 'log') loggedNow += 1;
          sent += 1;
        }
      }
      await time.advance(INTERVAL);
      logged += loggedNow;
      expect(loggedNow + written.length - before, `interval ${interval}`).toBeLessThanOrEqual(2 * (MAX_SUMMARY_KEYS + 1));
    }
    rejections.close();
    expect(logged + written.reduce((sum, summary) => sum + Number(summary.count), 0)).toBe(sent);
  });

  it('tracks at most maxKeys keys; rejections beyond share one untracked key, its first logged and the rest counted', () => {
    const time = createFakeTime();
    const { it: rejections, written } = summariser(time, { maxKeys: 2 });
    const key = (status: number): RejectionKey => ({ method: 'GET', route: 'unmatched', status });
    expect([400, 401, 402, 403, 404, 400].map((status) => rejections.observe(key(status)))).toEqual(['log', 'log', 'log', 'counted', 'counted', 'counted']);
    rejections.close();
    expect(written.map(untimed)).toEqual([
      { event: 'http_rejections_repeated', method: 'GET', route: 'unmatched', status: 400, count: 1, interval_ms: INTERVAL },
      { event: 'http_rejections_repeated', ...UNTRACKED_KEY, count: 2, interval_ms: INTERVAL },
    ]);
  });

  it('with logFirst false counts every rejection, the first too', () => {
    const time = createFakeTime();
    const { it: rejections, written } = summariser(time, { logFirst: false, event: 'executor_admission_rejections_repeated' });
    expect(rejections.observe(unauthorized)).toBe('counted');
    expect(rejections.observe(unauthorized)).toBe('counted');
    rejections.close();
    expect(written).toMatchObject([{ event: 'executor_admission_rejections_repeated', count: 2 }]);
  });

  it('accounts for every rejection exactly once, as its own line or in one summary, however they arrive', async () => {
    const keys = [unauthorized, notFound, { ...notFound, method: 'POST' }, { method: 'PUT', route: '/agents/:agent_id/policy', status: 400, code: 'invalid_request' }];
    await fc.assert(
      fc.asyncProperty(
        // Bursts (mostly no time between arrivals) with gaps now and then, some past an interval.
        fc.array(fc.record({ key: fc.nat(keys.length - 1), after: fc.oneof({ arbitrary: fc.constant(0), weight: 8 }, { arbitrary: fc.nat(INTERVAL * 2), weight: 1 }) }), {
          minLength: 1,
          maxLength: 300,
          size: 'max',
        }),
        fc.integer({ min: 1, max: 4 }),
        async (arrivals, maxKeys) => {
          const time = createFakeTime();
          const { it: rejections, written } = summariser(time, { maxKeys });
          const logged = new Map<string, number>();
          for (const arrival of arrivals) {
            await time.advance(arrival.after);
            const key = keys[arrival.key] as RejectionKey;
            if (rejections.observe(key) === 'log') logged.set(JSON.stringify(key), (logged.get(JSON.stringify(key)) ?? 0) + 1);
          }
          rejections.close();
          const summarised = written.reduce((sum, summary) => sum + (summary.count as number), 0);
          expect([...logged.values()].reduce((sum, count) => sum + count, 0) + summarised).toBe(arrivals.length);
          if (maxKeys >= keys.length) {
            // Nothing beyond the cap: the sums also hold key by key.
            for (const key of keys) {
              const counted = written.filter((summary) => keyOf(summary) === JSON.stringify(Object.entries(key)));
              const sent = arrivals.filter((arrival) => keys[arrival.key] === key).length;
              expect((logged.get(JSON.stringify(key)) ?? 0) + counted.reduce((sum, summary) => sum + (summary.count as number), 0)).toBe(sent);
            }
          }
          expect(time.pending()).toBe(0);
        },
      ),
      { numRuns: 60 },
    );
  });

  it("counts 4xx answers as rejections, never a 5xx or a success", () => {
    expect([400, 401, 404, 405, 413, 415, 422, 429, 499].every(isRejection)).toBe(true);
    expect([200, 201, 304, 399, 500, 503].some(isRejection)).toBe(false);
  });

  it("uses timers that never keep the process alive", () => {
    const timing = systemSummaryTiming();
    expect(timing.intervalMs).toBe(60_000);
    const handle = timing.timers.setTimeout(() => undefined, 60_000) as NodeJS.Timeout;
    try {
      expect(handle.hasRef()).toBe(false);
    } finally {
      timing.timers.clearTimeout(handle);
    }
  });
});
