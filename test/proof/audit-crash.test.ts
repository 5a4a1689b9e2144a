import { existsSync } from 'node:fs';
import { readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CRASH_FILE_ENV } from '../../src/crash-points.js';
import { EXECUTOR_MIGRATIONS } from '../../src/executor/store/migrations/executor-migrations.js';
import { openDatabase } from '../../src/storage/open-database.js';
import { makeTempDir, removeDir } from '../support/cli.js';
import { call, mintCredential } from '../support/ledger.js';
import { ledgerConfig, spawnLedger, type LedgerProcess } from '../support/ledger-process.js';
import { checkInvariants } from './check-invariants.js';

/*
 * Issue 27 item 6's crash proof: a `lexec ledger serve` development build, told to by
 * LEXEC_DEV_CRASH_FILE, SIGKILLs itself right after an approver's decision commits
 * (`ledger.after_decision_commit`), before it answers. The decision and its audit event are one
 * transaction: after the kill both are there, or neither — here both, the event naming the
 * approver's credential at the decision's own time. Restarted on the same database, the
 * approver's retry is answered as decided and records nothing more; the independent checker,
 * with its audit rules, is clean. An approval and a denial, each killed once.
 */

let dir: string;
let ledger: LedgerProcess;
let adminToken: string;
let approver: string;
let agent: string;
const armFile = () => join(dir, 'crash-point');

const databasePath = () => join(dir, 'state', 'ledger.db');
function query<T>(sql: string, ...params: unknown[]): T[] {
  const db = new Database(databasePath(), { readonly: true });
  db.defaultSafeIntegers(true);
  try {
    return db.prepare(sql).all(...params) as T[];
  } finally {
    db.close();
  }
}

const start = () => spawnLedger(dir, ledgerConfig(dir), 'ledger.json', undefined, { env: { [CRASH_FILE_ENV]: armFile() } });

beforeAll(async () => {
  dir = await makeTempDir('lexec-audit-crash-');
  ledger = await start();
  adminToken = (await readFile(ledger.adminCapabilityPath, 'utf8')).trim();
  const added = await call<{ agent: { agent_id: string } }>(ledger.url, 'POST', '/agents', { token: adminToken, body: { name: 'bot' } });
  agent = await mintCredential({ url: ledger.url, adminToken }, 'agent', added.body.agent.agent_id);
  approver = await mintCredential({ url: ledger.url, adminToken }, 'approver');
}, 120_000);

afterAll(async () => {
  await ledger.stop();
  await removeDir(dir);
});

/** A request above the approval threshold: it waits for the approver. */
async function requested(): Promise<string> {
  const answer = await call<{ authorization: { token_id: string; status: string } }>(ledger.url, 'POST', '/authorizations', {
    token: agent,
    body: { amount_units: '2000000', units_scale: 6, currency: 'USD' },
  });
  expect(answer.body.authorization.status).toBe('requested');
  return answer.body.authorization.token_id;
}

describe('the ledger SIGKILLed right after a decision commits', () => {
  it.each([
    ['approve', 'approved', 'authorization_approved'],
    ['deny', 'denied', 'authorization_denied'],
  ] as const)('%s: the decision and its audit event are both there; the retry is answered and records nothing more', async (verb, status, action) => {
    const tokenId = await requested();
    await rm(`${armFile()}.fired`, { force: true });
    await writeFile(armFile(), 'ledger.after_decision_commit\n');
    const lost = await call(ledger.url, 'POST', `/authorizations/${tokenId}/${verb}`, { token: approver, body: { reason: 'answer lost' } }).then(
      () => 'answered',
      () => 'no answer',
    );
    expect(lost).toBe('no answer');
    // 128: killed by a signal, the one the crash point sends itself.
    expect(await ledger.stop()).toBe(128);
    expect(existsSync(`${armFile()}.fired`)).toBe(true);
    expect(ledger.events()).toContainEqual(expect.objectContaining({ event: 'crash_point_fired', point: 'ledger.after_decision_commit' }));

    const [decided] = query<{ status: string; decided_by: string; decided_at: bigint }>('SELECT status, decided_by, decided_at FROM authorizations WHERE token_id = ?', tokenId);
    expect(decided?.status).toBe(status);
    const events = () => query<{ actor_kind: string; actor_credential_id: string; at: bigint; reason: string }>('SELECT actor_kind, actor_credential_id, at, reason FROM audit_events WHERE subject_id = ?', tokenId);
    expect(events()).toEqual([{ actor_kind: 'approver', actor_credential_id: decided?.decided_by, at: decided?.decided_at, reason: 'answer lost' }]);
    expect(query('SELECT action FROM audit_events WHERE subject_id = ?', tokenId)).toEqual([{ action }]);

    ledger = await start();
    const retry = await call<{ authorization: { status: string } }>(ledger.url, 'POST', `/authorizations/${tokenId}/${verb}`, { token: approver, body: { reason: 'answer lost' } });
    expect([retry.status, retry.body.authorization.status]).toEqual([200, status]);
    expect(events()).toHaveLength(1);
  }, 120_000);

  it('the independent checker finds every operator action of this ledger with its audit event', () => {
    const executorDatabase = join(dir, 'executor.db');
    openDatabase(executorDatabase, EXECUTOR_MIGRATIONS).close();
    const report = checkInvariants({ ledgerDatabase: databasePath(), executorDatabase, submissionsLog: null, sandboxJobsFile: null, artifactRoot: join(dir, 'artifacts') });
    expect(report.violations).toEqual([]);
    expect(query<{ n: bigint }>("SELECT COUNT(*) AS n FROM audit_events WHERE action IN ('authorization_approved', 'authorization_denied')")).toEqual([{ n: 2n }]);
  });
});
