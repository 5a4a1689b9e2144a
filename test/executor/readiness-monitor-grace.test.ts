import { describe, expect, it } from 'vitest';
import {
  initialReadinessState,
  MIN_PROBE_INTERVAL_MS,
  observeEngine,
  probeIntervalMs,
  READINESS_GRACE_MS,
  type ReadinessState,
} from '../../src/executor/domain/readiness-state.js';
import { CANCELLATION_CONFIRMATION_TIMEOUT_MS, PROBE_TIMEOUT_MS } from '../../src/executor/readiness-monitor.js';
import { CANCELLED, countingReadiness, EMPTY, harness, INTERVAL, isReady, OK, readyHarness, UNAVAILABLE } from '../support/readiness-monitor-harness.js';

/*
 * The readiness monitor against spec §3 rules 4, 5, 6, 9 and 11: the fixed 30 s grace of a
 * cancellation sequence, its bounded confirmation, what ends it, and the probe intervals capped
 * at it; one describe per rule. Startup, withdrawal, the probe log and stopping:
 * readiness-monitor.test.ts. Time is a fake clock and timer port: nothing sleeps. The probes are
 * scripted answers (test/support/readiness-monitor-harness.ts).
 */

describe('rule 4: recovery grace is a fixed 30 seconds', () => {
  it('is 30 000 ms', () => {
    expect(READINESS_GRACE_MS).toBe(30_000);
  });

  it.each([1_000, 7_000, 30_000])('ends a cancellation sequence 30 s after its start with a %i ms probe interval', async (intervalMs) => {
    const h = await readyHarness({ intervalMs });
    h.engine.always(CANCELLED);
    await h.time.advance(intervalMs);
    const windowStart = h.t0 + intervalMs;
    expect(h.monitor.state().engine.windowStart).toBe(windowStart);
    await h.time.advance(29_999);
    expect(h.readiness.isReady()).toBe(true);
    await h.time.advance(1);
    expect(h.readiness.isReady()).toBe(false);
    expect(h.events('executor_readiness_withdrawn').map((line) => line.at)).toEqual([windowStart + 30_000]);
  });
});

describe('rule 5: a Cancelled task-queue RPC gets one immediate bounded confirmation', () => {
  it('confirms at once, at the same instant, with the short bound, and a healthy confirmation is a healthy sample', async () => {
    const h = await readyHarness();
    h.engine.next({ after: 400, answer: CANCELLED }, OK);
    await h.time.advance(INTERVAL + 400);
    expect(h.engine.calls.slice(1)).toEqual([
      { at: h.t0 + INTERVAL, timeoutMs: PROBE_TIMEOUT_MS },
      { at: h.t0 + INTERVAL + 400, timeoutMs: CANCELLATION_CONFIRMATION_TIMEOUT_MS },
    ]);
    expect(h.probes('workflow_engine').at(-1)).toEqual({
      event: 'executor_dependency_probe',
      dependency: 'workflow_engine',
      outcome: 'ok',
      consecutive_failures: 0,
      pollers: 1,
      confirmation: 'ok',
    });
    expect(h.readiness.isReady()).toBe(true);
  });

  it('does not confirm a cancelled confirmation again: exactly two RPCs until the next round', async () => {
    const h = await readyHarness();
    h.engine.next(CANCELLED, CANCELLED);
    await h.time.advance(INTERVAL);
    expect(h.engine.calls.map((call) => call.at)).toEqual([h.t0, h.t0 + INTERVAL, h.t0 + INTERVAL]);
    await h.time.advance(INTERVAL - 1);
    expect(h.engine.calls).toHaveLength(3);
    await h.time.advance(1);
    expect(h.engine.calls).toHaveLength(4);
  });

  it('keeps readiness through confirmed cancellations while the window is below 30 s, counting one failure per sample', async () => {
    const h = await readyHarness();
    h.engine.always(CANCELLED);
    await h.time.advance(6 * INTERVAL);
    expect(h.readiness.isReady()).toBe(true);
    expect(h.probes('workflow_engine').slice(1).map((entry) => entry.consecutive_failures)).toEqual([1, 2, 3, 4, 5, 6]);
  });

  it('keeps the original window start: that of the first cancelled RPC, not of a slower confirmation', async () => {
    const h = await readyHarness();
    h.engine.always(CANCELLED);
    h.engine.next(CANCELLED, { after: 1_500, answer: CANCELLED });
    const windowStart = h.t0 + INTERVAL;
    await h.time.advance(INTERVAL + 1_500);
    expect(h.monitor.state().engine.windowStart).toBe(windowStart);
    await h.time.advance(windowStart + 29_999 - h.time.clock.now());
    expect(h.readiness.isReady()).toBe(true);
    await h.time.advance(1);
    expect(h.readiness.isReady()).toBe(false);
    expect(h.readiness.reason()).toBe('workflow_engine_cancelled');
  });

  it('keeps the window of an earlier failure when cancellations follow it', () => {
    let state: ReadinessState = { ...initialReadinessState(), started: true, pollerProof: true, ready: true };
    state = observeEngine(state, { outcome: 'error' }, 1_000, 1_000);
    state = observeEngine(state, { outcome: 'cancelled' }, 6_000, 6_100);
    expect(state.engine).toEqual({ health: 'cancelled', consecutiveFailures: 2, windowStart: 1_000 });
  });

  it('preserves readiness strictly below 30 s of window, not at 30 s', () => {
    const held: ReadinessState = {
      ...initialReadinessState(),
      started: true,
      pollerProof: true,
      ready: true,
      engine: { health: 'cancelled', consecutiveFailures: 1, windowStart: 0 },
    };
    expect(observeEngine(held, { outcome: 'cancelled' }, 29_000, 29_999).ready).toBe(true);
    expect(observeEngine(held, { outcome: 'cancelled' }, 29_000, 30_000).ready).toBe(false);
  });

  it('preserves readiness only after startup supplied the poller proof', () => {
    const base = { ...initialReadinessState(), ready: true, started: true };
    expect(isReady(observeEngine({ ...base, pollerProof: false }, { outcome: 'cancelled' }, 0, 0))).toBe(false);
    expect(isReady(observeEngine({ ...base, pollerProof: true }, { outcome: 'cancelled' }, 0, 0))).toBe(true);
  });

  it('never establishes readiness at startup, even with the poller proof and a healthy ledger', async () => {
    const h = harness();
    h.ledger.next(new Error('down'));
    await h.start();
    expect(h.monitor.state().pollerProof).toBe(true);
    h.engine.always(CANCELLED);
    await h.time.advance(3 * INTERVAL);
    expect(h.readiness.isReady()).toBe(false);
    expect(h.readiness.reason()).toBe('workflow_engine_cancelled');
    expect(h.startup()).toBeUndefined();
    h.engine.always(OK);
    await h.time.advance(INTERVAL);
    expect(h.startup()).toBe('ready');
  });

  it('never restores readiness after a real error, however long the cancellations last', async () => {
    const readiness = countingReadiness();
    const h = await readyHarness({ readiness });
    h.engine.next(UNAVAILABLE);
    await h.time.advance(INTERVAL);
    expect(h.readiness.isReady()).toBe(false);
    h.engine.always(CANCELLED);
    await h.time.advance(10 * INTERVAL);
    expect(h.readiness.isReady()).toBe(false);
    expect(readiness.restorations()).toBe(1);
    h.engine.always(OK);
    await h.time.advance(INTERVAL);
    expect(h.readiness.isReady()).toBe(true);
  });

  it('withdraws at once when the confirmation fails with another status', async () => {
    const h = await readyHarness();
    h.engine.next(CANCELLED, { outcome: 'error', code: 'UNAVAILABLE' });
    await h.time.advance(INTERVAL);
    expect(h.readiness.isReady()).toBe(false);
    expect(h.probes('workflow_engine').at(-1)).toMatchObject({ outcome: 'error', grpc_status: 'UNAVAILABLE', confirmation: 'error', consecutive_failures: 1 });
  });

  it('bounds the confirmation: no answer within 2 s is DEADLINE_EXCEEDED and withdraws', async () => {
    const h = await readyHarness();
    h.engine.next(CANCELLED, 'hang');
    await h.time.advance(INTERVAL + CANCELLATION_CONFIRMATION_TIMEOUT_MS - 1);
    expect(h.readiness.isReady()).toBe(true);
    await h.time.advance(1);
    expect(h.readiness.isReady()).toBe(false);
    expect(h.probes('workflow_engine').at(-1)).toMatchObject({ outcome: 'error', grpc_status: 'DEADLINE_EXCEEDED', confirmation: 'error' });
  });
});

describe('rule 6: every successful task-queue RPC confirms runtime reachability', () => {
  it('restores readiness after an error on an answer with an empty historical poller list', async () => {
    const h = await readyHarness();
    h.engine.next(UNAVAILABLE);
    await h.time.advance(INTERVAL);
    expect(h.readiness.isReady()).toBe(false);
    h.engine.always(EMPTY);
    await h.time.advance(INTERVAL);
    expect(h.readiness.isReady()).toBe(true);
    expect(h.probes('workflow_engine').at(-1)).toMatchObject({ outcome: 'ok', pollers: 0, consecutive_failures: 0 });
  });

  it('ends a cancellation sequence with an empty poller list: no withdrawal at the old boundary', async () => {
    const h = await readyHarness();
    h.engine.next(CANCELLED, CANCELLED, EMPTY);
    h.engine.always(OK);
    await h.time.advance(INTERVAL * 2);
    expect(h.monitor.state().engine).toEqual({ health: 'ok', consecutiveFailures: 0, windowStart: undefined });
    await h.time.advance(60_000);
    expect(h.readiness.isReady()).toBe(true);
    expect(h.events('executor_readiness_withdrawn')).toEqual([]);
  });
});

describe('rule 9: an uninterrupted cancellation sequence withdraws readiness at the grace boundary', () => {
  it('withdraws exactly at the boundary, between samples, and stays withdrawn until a healthy sample', async () => {
    const h = await readyHarness({ intervalMs: 7_000 });
    h.engine.always(CANCELLED);
    await h.time.advance(7_000);
    const boundary = h.t0 + 7_000 + READINESS_GRACE_MS;
    await h.time.advance(boundary - h.time.clock.now() - 1);
    expect(h.readiness.isReady()).toBe(true);
    await h.time.advance(1);
    expect(h.readiness.isReady()).toBe(false);
    expect(h.engine.calls.some((call) => call.at === boundary)).toBe(false);
    expect(h.events('executor_readiness_withdrawn').map((line) => [line.at, line.entry.reason])).toEqual([[boundary, 'workflow_engine_cancelled']]);
    await h.time.advance(5 * 7_000);
    expect(h.readiness.isReady()).toBe(false);
    h.engine.always(OK);
    await h.time.advance(7_000);
    expect(h.readiness.isReady()).toBe(true);
  });
});

describe('rule 11: runtime probe intervals are capped at the grace duration', () => {
  it('defaults to 5 s and clamps to [100 ms, 30 s]', () => {
    expect(probeIntervalMs()).toBe(5_000);
    expect(probeIntervalMs(Number.NaN)).toBe(5_000);
    expect(probeIntervalMs(60_000)).toBe(30_000);
    expect(probeIntervalMs(Number.POSITIVE_INFINITY)).toBe(30_000);
    expect(probeIntervalMs(30_000)).toBe(30_000);
    expect(probeIntervalMs(12_000)).toBe(12_000);
    expect(probeIntervalMs(0)).toBe(MIN_PROBE_INTERVAL_MS);
  });

  it('samples every 30 s when asked for two minutes', async () => {
    const h = await readyHarness({ intervalMs: 120_000 });
    expect(h.monitor.intervalMs).toBe(30_000);
    await h.time.advance(60_000);
    expect(h.engine.calls.map((call) => call.at)).toEqual([h.t0, h.t0 + 30_000, h.t0 + 60_000]);
  });

  it('measures the interval from start to start, so a slow probe does not stretch it', async () => {
    const h = await readyHarness();
    h.ledger.always({ after: 3_000, answer: 'ok' });
    await h.time.advance(3 * INTERVAL);
    expect(h.engine.calls.map((call) => call.at)).toEqual([0, 1, 2, 3].map((round) => h.t0 + round * INTERVAL));
  });

  it('bounds a hung probe, so the next sample still starts within the grace duration', async () => {
    const h = await readyHarness({ intervalMs: 30_000 });
    h.engine.next('hang');
    await h.time.advance(30_000 + PROBE_TIMEOUT_MS);
    expect(h.readiness.isReady()).toBe(false);
    expect(h.probes('workflow_engine').at(-1)).toMatchObject({ outcome: 'error', grpc_status: 'DEADLINE_EXCEEDED' });
    await h.time.advance(30_000 - PROBE_TIMEOUT_MS);
    expect(h.engine.calls.map((call) => call.at)).toEqual([h.t0, h.t0 + 30_000, h.t0 + 60_000]);
    expect(h.readiness.isReady()).toBe(true);
  });
});
