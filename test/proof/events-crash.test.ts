import { randomUUID } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EXECUTOR_MIGRATIONS } from '../../src/executor/store/migrations/executor-migrations.js';
import { openDatabase } from '../../src/storage/open-database.js';
import { makeTempDir, removeDir } from '../support/cli.js';
import { call, mintCredential, preciseReceipt } from '../support/ledger.js';
import { ledgerConfig, spawnLedger, type LedgerProcess } from '../support/ledger-process.js';
import { checkInvariants } from './check-invariants.js';

/*
 * Issue 28 item 2's crash proof: a real `lexec ledger serve` is SIGKILLed in the middle of a stream
 * of spend requests, claims, settlements, releases and reconciliation records from concurrent
 * clients — some committed, some under way, some never answered. A change and its event are one
 * transaction, so after the kill and a restart on the same database the independent checker finds
 * every settlement, release, record and request with exactly one event and no event without its
 * change; the restarted ledger goes on appending after the last id.
 */

const WORKERS = 4;
/** Commits to see before the kill: enough that it lands amid the stream, not before it. */
const BEFORE_KILL = 40;
const OUTBOX_RULES = new Set(['change_has_one_event', 'event_has_change', 'settle_xor_release', 'amounts_are_integers']);

let dir: string;
let ledger: LedgerProcess;
let agent: string;
let executor: string;

const databasePath = () => join(dir, 'state', 'ledger.db');
function query<T>(sql: string): T[] {
  const db = new Database(databasePath(), { readonly: true });
  db.defaultSafeIntegers(true);
  try {
    return db.prepare(sql).all() as T[];
  } finally {
    db.close();
  }
}

beforeAll(async () => {
  dir = await makeTempDir('lexec-events-crash-');
  ledger = await spawnLedger(dir, ledgerConfig(dir));
  const adminToken = (await readFile(ledger.adminCapabilityPath, 'utf8')).trim();
  const added = await call<{ agent: { agent_id: string } }>(ledger.url, 'POST', '/agents', { token: adminToken, body: { name: 'stream-bot' } });
  agent = await mintCredential({ url: ledger.url, adminToken }, 'agent', added.body.agent.agent_id);
  executor = await mintCredential({ url: ledger.url, adminToken }, 'executor');
}, 120_000);

afterAll(async () => {
  await ledger.stop();
  await removeDir(dir);
});

/** One authorization's life: requested, claimed, then settled, released or parked in turn. Throws once the ledger is gone. */
async function cycle(url: string, n: number): Promise<number> {
  const asked = await call<{ authorization: { token_id: string } }>(url, 'POST', '/authorizations', {
    token: agent,
    body: { amount_units: '10000', units_scale: 6, currency: 'USD', target_id: 'lexec:target:v1:flux-schnell' },
  });
  const tokenId = asked.body.authorization.token_id;
  const execution = `exe_${randomUUID()}`;
  const executorCall = (verb: string, body: Record<string, unknown>) => call(url, 'POST', `/executor/authorizations/${tokenId}/${verb}`, { token: executor, body: { execution_id: execution, ...body } });
  // The authorization names its target: the claim requires it, as the executor's does.
  await executorCall('claim', { require: { currency: 'USD', min_held_units: '0', target_id: 'lexec:target:v1:flux-schnell' } });
  if (n % 3 === 0) await executorCall('settle', { receipt: preciseReceipt(3000n) });
  else if (n % 3 === 1) await executorCall('release', { reason: 'not_transmitted' });
  else await executorCall('reconciliation', { reason: 'billing_ambiguous', evidence: {} });
  return 4;
}

describe('the ledger SIGKILLed amid a stream of changes', () => {
  it('keeps each change with exactly one event, and goes on after the last id once restarted', async () => {
    let commits = 0;
    let gone = false;
    const url = ledger.url;
    const workers = Array.from({ length: WORKERS }, async (_, worker) => {
      for (let n = worker; !gone; n += WORKERS) {
        try {
          commits += await cycle(url, n);
        } catch {
          gone = true;
        }
      }
    });
    while (commits < BEFORE_KILL) await new Promise((resolve) => setTimeout(resolve, 5));
    expect(await ledger.stop('SIGKILL')).toBe(128);
    gone = true;
    await Promise.all(workers);

    ledger = await spawnLedger(dir, ledgerConfig(dir));
    const lastBefore = query<{ id: bigint }>('SELECT MAX(event_id) AS id FROM events')[0]?.id ?? 0n;
    await cycle(ledger.url, 0);
    const after = query<{ event_id: bigint; type: string }>(`SELECT event_id, type FROM events WHERE event_id > ${lastBefore.toString()} ORDER BY event_id`);
    expect(after.map((event) => event.type)).toEqual(['authorization.requested', 'authorization.settled']);
    expect(after[0]?.event_id).toBe(lastBefore + 1n);

    const executorDatabase = join(dir, 'executor.db');
    openDatabase(executorDatabase, EXECUTOR_MIGRATIONS).close();
    const report = checkInvariants({ ledgerDatabase: databasePath(), executorDatabase, submissionsLog: null, sandboxJobsFile: null, artifactRoot: join(dir, 'artifacts') });
    expect(report.violations.filter((violation) => OUTBOX_RULES.has(violation.rule))).toEqual([]);
    // The stream reached every kind of change before the kill.
    const counts = query<{ type: string; n: bigint }>('SELECT type, COUNT(*) AS n FROM events GROUP BY type');
    expect(counts.map((row) => row.type).sort()).toEqual(['authorization.released', 'authorization.requested', 'authorization.settled', 'reconciliation.opened']);
  }, 120_000);
});
