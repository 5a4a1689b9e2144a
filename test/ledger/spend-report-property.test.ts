import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import Database from 'better-sqlite3';
import fc from 'fast-check';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { composeLedger, type ComposedLedger } from '../../src/ledger/compose-ledger.js';
import { readPrivateFile } from '../../src/credentials/private-file.js';
import type { LedgerSpendReport } from '../../src/ledger/wire/answers.js';
import { preciseReceipt as preciseReceiptSchema } from '../../src/ledger/wire/requests.js';
import { makeTempDir, removeDir } from '../support/cli.js';
import { preciseReceipt, TEST_ADMIN } from '../support/ledger.js';

/*
 * Issue 28 item 5's proof: over random histories of requests, settlements, releases and expiries
 * at random times across months (two daylight-saving changes) in America/New_York, for every
 * grouping and random ranges, the groups' settled amounts add up to exactly the sum of the
 * settlement rows in the range — computed here by a plain SQL SUM over the settlements table —
 * each day's and month's group holds exactly the settlements of that calendar period (read by
 * toLocaleDateString, not the report's own code), and held amounts stay apart.
 */

const ZONE = 'America/New_York';
const START = Date.parse('2026-01-20T12:00:00Z');
const SPAN = 300 * 86_400_000; // to mid-November: both 2026 changes (8 March, 1 November)
const TARGETS = ['lexec:target:v1:flux-schnell', 'lexec:target:v1:flux-dev', null] as const;
const GROUPINGS = ['agent', 'target', 'day', 'week', 'month'] as const;

let dir: string;
beforeAll(async () => {
  dir = await makeTempDir('lexec-spend-property-');
});
afterAll(async () => {
  await removeDir(dir);
});

interface Tally {
  readonly settled_units: string;
  readonly settled_count: number;
  readonly held_units: string;
  readonly held_count: number;
}
type Report = Omit<LedgerSpendReport, 'groups' | 'total'> & { groups: (Tally & { group: string; parts?: (Tally & { part: string })[] })[]; total: Tally };

type Step =
  | { readonly kind: 'request'; readonly agent: number; readonly target: number; readonly units: bigint; readonly gapMs: number }
  | { readonly kind: 'settle' | 'release' | 'claim'; readonly pick: number; readonly fraction: number; readonly gapMs: number };

const gap = fc.integer({ min: 0, max: 4 * 86_400_000 });
const step: fc.Arbitrary<Step> = fc.oneof(
  fc.record({ kind: fc.constant('request' as const), agent: fc.nat(2), target: fc.nat(2), units: fc.bigInt({ min: 1n, max: 5_000_000n }), gapMs: gap }),
  fc.record({ kind: fc.constantFrom('settle' as const, 'release' as const, 'claim' as const), pick: fc.nat(), fraction: fc.integer({ min: 1, max: 100 }), gapMs: gap }),
);
const bound = fc.oneof(
  fc.constant(null),
  fc.integer({ min: START - 86_400_000, max: START + SPAN }).map((at) => new Date(at).toISOString()),
  fc.integer({ min: 0, max: 320 }).map((days) => new Date(START + days * 86_400_000).toISOString().slice(0, 10)),
);

interface Open {
  tokenId: string;
  units: bigint;
  executionId: string | null;
}

/** Replays a history on a fresh ledger at the history's own times; returns the ledger and how to read the report. */
async function replay(steps: readonly Step[]) {
  const home = join(dir, randomUUID());
  let clock = START;
  const big = 10n ** 15n;
  const ledger: ComposedLedger = await composeLedger({
    config: {
      database_path: join(home, 'ledger.db'),
      admin_capability_path: join(home, 'credentials', 'admin.capability'),
      contract_level: 'v4.5',
      authorization_ttl_seconds: 7 * 86_400,
      default_policy: { per_authorization_cap_units: big, daily_cap_units: big, approval_threshold_units: big },
      time_zone: ZONE,
    },
    logger: pino({ level: 'silent' }),
    now: () => clock,
  });
  const reader = new Database(join(home, 'ledger.db'), { readonly: true });
  reader.defaultSafeIntegers(true);
  const agents = ['alpha', 'beta', 'gamma'].map((name) => ledger.admin.addAgent(name, TEST_ADMIN).agent_id);
  const open: Open[] = [];
  for (const next of steps) {
    clock += next.gapMs;
    if (next.kind === 'request') {
      const target = TARGETS[next.target] ?? null;
      const { authorization } = ledger.service.requestAuthorization(agents[next.agent] ?? '', { amount_units: next.units, currency: 'USD', ...(target === null ? {} : { target_id: target }) });
      open.push({ tokenId: authorization.token_id, units: next.units, executionId: null });
      continue;
    }
    if (open.length === 0) continue;
    const index = next.pick % open.length;
    const chosen = open[index] as Open;
    try {
      if (chosen.executionId === null) {
        chosen.executionId = `exe_${randomUUID().replaceAll('-', '')}`;
        ledger.service.claim(chosen.tokenId, chosen.executionId, undefined, 'cred_executor');
      }
      if (next.kind === 'claim') continue;
      if (next.kind === 'settle') {
        const units = (chosen.units * BigInt(next.fraction)) / 100n || 1n;
        ledger.service.settle(chosen.tokenId, chosen.executionId, { shape: 'precise', body: preciseReceiptSchema.parse(preciseReceipt(units)) });
      } else {
        ledger.service.release(chosen.tokenId, chosen.executionId, 'not_transmitted', 'cred_executor');
      }
    } catch (error) {
      // An authorization that expired before its claim cannot be claimed: that too is a history.
      if (!(error instanceof Error && error.name === 'LedgerError')) throw error;
    }
    open.splice(index, 1);
  }
  const token = await readPrivateFile(join(home, 'credentials', 'admin.capability'), 'admin capability');
  const report = async (query: URLSearchParams) => {
    const answer = await ledger.app.inject({ method: 'GET', url: `/reports/spend?${query.toString()}`, headers: { authorization: `Bearer ${token}` } });
    return { status: answer.statusCode, body: answer.json<{ report: Report; error?: { fields?: string[] } }>() };
  };
  return {
    report,
    clock: () => clock,
    sql: <T>(text: string, ...params: unknown[]) => reader.prepare(text).all(...params) as T[],
    async close() {
      reader.close();
      await ledger.app.close();
      ledger.close();
    },
  };
}

const sum = (values: readonly string[]) => values.reduce((total, value) => total + BigInt(value), 0n);
/** The calendar date of an instant in the zone, as the runtime's own locale formatting says (not the report's code). */
const localDay = (at: number) => new Date(at).toLocaleDateString('en-CA', { timeZone: ZONE });

/** The first instant of a date in New York, found independently: of its two possible offsets, the one whose midnight reads as that date's midnight. */
function newYorkMidnight(date: string): number {
  for (const offset of ['-05:00', '-04:00']) {
    const at = Date.parse(`${date}T00:00:00${offset}`);
    const wall = new Date(at).toLocaleString('en-CA', { timeZone: ZONE, hourCycle: 'h23' });
    if (wall.startsWith(`${date}, 00:00`)) return at;
  }
  throw new Error(`no midnight found for ${date}`);
}
const instant = (bound: string | null) => (bound === null ? null : bound.length === 10 ? newYorkMidnight(bound) : Date.parse(bound));

interface SettlementRow {
  at: bigint;
  units: bigint;
}

describe('spend report totals over random histories', () => {
  let settledHistories = 0;
  afterAll(() => {
    // A property that held only over histories without settlements would prove nothing. About
    // half of the random histories settle something (15-20 of 30 seen); a quarter is the floor,
    // so the guard never fails by chance yet would catch a generator that stopped settling.
    expect(settledHistories).toBeGreaterThanOrEqual(8);
  });

  it('equal the settlement rows of the range for every grouping; each day and month holds its own settlements; held is apart', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(step, { minLength: 10, maxLength: 80, size: 'medium' }), fc.array(fc.tuple(bound, bound), { minLength: 1, maxLength: 3 }), async (steps, ranges) => {
        const history = await replay(steps);
        try {
          if (history.sql('SELECT 1 FROM settlements').length > 0) settledHistories += 1;
          for (const [sinceText, untilText] of ranges) {
            const since = instant(sinceText);
            const until = instant(untilText);
            const inRange = (at: number) => (since === null || at >= since) && (until === null || at < until);
            const rows = history.sql<SettlementRow>('SELECT created_at AS at, amount_units AS units FROM settlements').filter((row) => inRange(Number(row.at)));
            const [expected] = history.sql<{ total: bigint; count: bigint }>(
              'SELECT COALESCE(SUM(amount_units), 0) AS total, COUNT(*) AS count FROM settlements WHERE (? IS NULL OR created_at >= ?) AND (? IS NULL OR created_at < ?)',
              since, since, until, until,
            );
            const [held] = history.sql<{ total: bigint }>(
              `SELECT COALESCE(SUM(amount_units), 0) AS total FROM authorizations
               WHERE ((status IN ('requested', 'approved') AND expires_at > ?) OR status = 'claimed') AND (? IS NULL OR created_at >= ?) AND (? IS NULL OR created_at < ?)`,
              history.clock(), since, since, until, until,
            );
            for (const by of GROUPINGS) {
              const query = new URLSearchParams({ by });
              if (sinceText !== null) query.set('since', sinceText);
              if (untilText !== null) query.set('until', untilText);
              // Periods split per agent or target (the console's chart series): the parts add up to their group.
              const split = by === 'day' || by === 'month' ? 'agent' : by === 'week' ? 'target' : null;
              if (split !== null) query.set('split', split);
              const answer = await history.report(query);
              if (since !== null && until !== null && since >= until) {
                expect(answer.status).toBe(400);
                expect(answer.body.error?.fields).toEqual(['until']);
                continue;
              }
              expect(answer.status).toBe(200);
              const { report } = answer.body;
              expect(report.time_zone).toBe(ZONE);
              expect([report.since, report.until]).toEqual([since, until].map((at) => (at === null ? null : new Date(at).toISOString())));
              expect(sum(report.groups.map((group) => group.settled_units))).toBe(expected?.total);
              expect(BigInt(report.total.settled_units)).toBe(expected?.total);
              expect(report.groups.reduce((count, group) => count + group.settled_count, 0)).toBe(Number(expected?.count));
              expect(sum(report.groups.map((group) => group.held_units))).toBe(held?.total);
              expect(BigInt(report.total.held_units)).toBe(held?.total);
              for (const group of split === null ? [] : report.groups) {
                expect(sum(group.parts?.map((part) => part.settled_units) ?? [])).toBe(BigInt(group.settled_units));
                expect(sum(group.parts?.map((part) => part.held_units) ?? [])).toBe(BigInt(group.held_units));
              }
              if (by === 'day' || by === 'month') {
                const perPeriod = new Map<string, bigint>();
                for (const row of rows) {
                  const period = localDay(Number(row.at)).slice(0, by === 'day' ? 10 : 7);
                  perPeriod.set(period, (perPeriod.get(period) ?? 0n) + row.units);
                }
                const reported = new Map(report.groups.filter((group) => group.settled_count > 0).map((group) => [group.group, BigInt(group.settled_units)]));
                expect(reported).toEqual(perPeriod);
              }
            }
          }
        } finally {
          await history.close();
        }
      }),
      { numRuns: 30 },
    );
  });
});
