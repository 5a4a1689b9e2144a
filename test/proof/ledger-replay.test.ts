import { randomUUID } from 'node:crypto';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CRASH_FILE_ENV, type CrashPoint } from '../../src/crash-points.js';
import { makeTempDir, removeDir } from '../support/cli.js';
import { call, preciseReceipt, setUpActors, type Actors, type CallResult } from '../support/ledger.js';
import { ledgerConfig, spawnLedger, type LedgerProcess } from '../support/ledger-process.js';

/*
 * The ledger's replay paths (issue 24 item 10; docs/reliability.md "Crash points"): a real
 * `lexec ledger serve` killed at each of its crash points — its write committed, its answer never
 * sent — then started again on the same database and asked the identical request again, as the
 * executor (or a human) does. The replay is answered as such, with what was committed (the answer
 * the first request would have had), again the same when asked once more, and writes nothing:
 * every money table is byte-for-byte what the killed process left. The crash matrix proves the
 * same points end to end, on both engines, with the executor asking.
 */

let dir = '';
let armFile = '';
let ledger: LedgerProcess | undefined;
let actors: Actors;
let admin = '';

const url = () => ledger?.url ?? '';
const config = () => ledgerConfig(join(dir, 'ledger'));

async function startLedger(): Promise<void> {
  ledger = await spawnLedger(dir, config(), 'ledger.json', 30_000, { env: { [CRASH_FILE_ENV]: armFile } });
}

/** Every row of the tables that hold money or its records, in a stable order. */
function moneyTables(): Record<string, unknown[]> {
  const db = new Database(join(dir, 'ledger', 'state', 'ledger.db'), { readonly: true, fileMustExist: true });
  try {
    const tables = ['authorizations', 'settlements', 'releases', 'reconciliation_records'];
    return Object.fromEntries(tables.map((table) => [table, db.prepare(`SELECT * FROM ${table} ORDER BY rowid`).all()]));
  } finally {
    db.close();
  }
}

async function approvedToken(): Promise<string> {
  const answer = await call<{ authorization: { token_id: string; status: string } }>(url(), 'POST', '/authorizations', {
    token: actors.agent,
    body: { amount_units: '900000', units_scale: 6, currency: 'USD' },
  });
  expect(answer.body.authorization.status).toBe('approved');
  return answer.body.authorization.token_id;
}

const executionId = () => `exe_${randomUUID().replaceAll('-', '')}`;

/**
 * Arms `point`, sends `request`: the ledger commits and dies before answering (the request
 * fails). Starts it again and sends the identical request twice; answers both replays and the
 * money tables as the killed process left them and after the replays.
 */
async function killedThenAskedAgain<T>(point: CrashPoint, request: () => Promise<CallResult<T>>) {
  await writeFile(armFile, `${point}\n`);
  await expect(request()).rejects.toThrow();
  expect(ledger?.events().some((event) => event.event === 'crash_point_fired' && event.point === point)).toBe(true);
  await ledger?.stop('SIGKILL');
  await startLedger();
  const committed = moneyTables();
  const replay = await request();
  const again = await request();
  return { committed, replay, again, after: moneyTables() };
}

beforeAll(async () => {
  dir = await makeTempDir('lexec-ledger-replay-');
  armFile = join(dir, 'crash-point');
  await startLedger();
  admin = (await readFile(ledger?.adminCapabilityPath ?? '', 'utf8')).trim();
  actors = await setUpActors({ url: url(), adminToken: admin });
}, 120_000);

afterAll(async () => {
  await ledger?.stop('SIGKILL');
  await removeDir(dir);
});

describe('the ledger killed after a commit, asked again', () => {
  it('a claim: answered as the same execution\'s claim of the committed authorization, nothing written again', async () => {
    const token = await approvedToken();
    const execution = executionId();
    const claim = () => call<{ replayed: boolean; authorization: { execution_id: string; status: string } }>(url(), 'POST', `/executor/authorizations/${token}/claim`, {
      token: actors.executor,
      body: { execution_id: execution },
    });
    const { committed, replay, again, after } = await killedThenAskedAgain('ledger.after_claim_commit', claim);
    expect(replay.status).toBe(200);
    expect(replay.body).toMatchObject({ replayed: true, authorization: { execution_id: execution, status: 'claimed' } });
    // The answer the first claim would have had: the committed authorization as the executor reads it.
    const resolved = await call<{ authorization: unknown }>(url(), 'GET', `/executor/authorizations/${token}`, { token: actors.executor });
    expect(replay.body.authorization).toEqual(resolved.body.authorization);
    expect(again.body).toEqual(replay.body);
    expect(after).toEqual(committed);
  }, 120_000);

  it('a settle: answered with the one settlement committed, nothing written again', async () => {
    const token = await approvedToken();
    const execution = executionId();
    expect((await call(url(), 'POST', `/executor/authorizations/${token}/claim`, { token: actors.executor, body: { execution_id: execution } })).status).toBe(200);
    const receipt = preciseReceipt(3000n);
    const settle = () =>
      call<{ replayed: boolean; authorization: { status: string; settlement: { settlement_id: string; receipt_id: string } | null } }>(url(), 'POST', `/executor/authorizations/${token}/settle`, {
        token: actors.executor,
        body: { execution_id: execution, receipt },
      });
    const { committed, replay, again, after } = await killedThenAskedAgain('ledger.after_settle_commit', settle);
    expect(replay.status).toBe(200);
    expect(replay.body).toMatchObject({ replayed: true, authorization: { status: 'settled', settlement: { receipt_id: receipt.receipt_id } } });
    const settlements = committed.settlements as { settlement_id: string; token_id: string }[];
    expect(settlements.filter((row) => row.token_id === token).map((row) => row.settlement_id)).toEqual([replay.body.authorization.settlement?.settlement_id]);
    const shown = await call<{ authorization: unknown }>(url(), 'GET', `/authorizations/${token}`, { token: admin });
    expect(replay.body.authorization).toEqual(shown.body.authorization);
    expect(again.body).toEqual(replay.body);
    expect(after).toEqual(committed);
  }, 120_000);

  it('a release: answered with the one release committed, nothing written again', async () => {
    const token = await approvedToken();
    const execution = executionId();
    expect((await call(url(), 'POST', `/executor/authorizations/${token}/claim`, { token: actors.executor, body: { execution_id: execution } })).status).toBe(200);
    const release = () =>
      call<{ replayed: boolean; authorization: { status: string; release: { reason: string } | null } }>(url(), 'POST', `/executor/authorizations/${token}/release`, {
        token: actors.executor,
        body: { execution_id: execution, reason: 'not_transmitted' },
      });
    const { committed, replay, again, after } = await killedThenAskedAgain('ledger.after_release_commit', release);
    expect(replay.status).toBe(200);
    expect(replay.body).toMatchObject({ replayed: true, authorization: { status: 'released', release: { reason: 'not_transmitted' } } });
    expect((committed.releases as { token_id: string }[]).filter((row) => row.token_id === token)).toHaveLength(1);
    const shown = await call<{ authorization: unknown }>(url(), 'GET', `/authorizations/${token}`, { token: admin });
    expect(replay.body.authorization).toEqual(shown.body.authorization);
    expect(again.body).toEqual(replay.body);
    expect(after).toEqual(committed);
  }, 120_000);

  it('a reconciliation record, then a human\'s resolution of it: each answered with the one record committed, nothing written again', async () => {
    const token = await approvedToken();
    const execution = executionId();
    expect((await call(url(), 'POST', `/executor/authorizations/${token}/claim`, { token: actors.executor, body: { execution_id: execution } })).status).toBe(200);
    type RecordAnswer = { replayed: boolean; record: { record_id: string; token_id: string; status: string; resolution: string | null } };
    const open = () =>
      call<RecordAnswer>(url(), 'POST', `/executor/authorizations/${token}/reconciliation`, {
        token: actors.executor,
        body: { execution_id: execution, reason: 'billing_ambiguous', evidence: { provider_request_id: 'req-1' } },
      });
    const opened = await killedThenAskedAgain('ledger.after_reconciliation_commit', open);
    // A replay answers 200 (a new record 201).
    expect(opened.replay.status).toBe(200);
    expect(opened.replay.body).toMatchObject({ replayed: true, record: { token_id: token, status: 'open' } });
    const listed = async () =>
      (await call<{ records: RecordAnswer['record'][] }>(url(), 'GET', '/reconciliation-records', { token: actors.reconciliation })).body.records.filter((record) => record.token_id === token);
    expect(await listed()).toEqual([opened.replay.body.record]);
    expect(opened.again.body).toEqual(opened.replay.body);
    expect(opened.after).toEqual(opened.committed);

    const resolve = () =>
      call<RecordAnswer>(url(), 'POST', `/reconciliation-records/${opened.replay.body.record.record_id}/resolve`, {
        token: actors.reconciliation,
        body: { resolution: 'release', reason: 'provider: no such request' },
      });
    const resolved = await killedThenAskedAgain('ledger.after_resolve_commit', resolve);
    expect(resolved.replay.status).toBe(200);
    expect(resolved.replay.body).toMatchObject({ replayed: true, record: { status: 'resolved', resolution: 'released' } });
    expect(await listed()).toEqual([resolved.replay.body.record]);
    expect((resolved.committed.releases as { token_id: string; reason: string }[]).filter((row) => row.token_id === token).map((row) => row.reason)).toEqual(['reconciled_no_charge']);
    expect(resolved.again.body).toEqual(resolved.replay.body);
    expect(resolved.after).toEqual(resolved.committed);
  }, 120_000);
});
