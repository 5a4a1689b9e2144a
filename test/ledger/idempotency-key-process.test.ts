import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readPrivateFile } from '../../src/credentials/private-file.js';
import { setUpActors } from '../support/ledger.js';
import { ledgerConfig, spawnLedger, startLedgerProcess, type LedgerProcess, type TemporaryLedgerProcess } from '../support/ledger-process.js';

/*
 * Issue 27 item 5's race on real `lexec ledger serve` processes: concurrent requests with one
 * Idempotency-Key, sent to two ledger processes on one database, open exactly one authorization
 * and one hold — the lookup and the insert are one IMMEDIATE transaction, and the store's partial
 * UNIQUE index allows one open authorization per agent and key.
 */

let ledger: TemporaryLedgerProcess;
let other: LedgerProcess;
let adminToken: string;
let reader: Database.Database;

beforeAll(async () => {
  ledger = await startLedgerProcess();
  const databasePath = join(ledger.dir, 'state', 'ledger.db');
  other = await spawnLedger(ledger.dir, ledgerConfig(ledger.dir, { database_path: databasePath }), 'other.json');
  adminToken = await readPrivateFile(ledger.adminCapabilityPath, 'admin capability');
  reader = new Database(databasePath, { readonly: true });
}, 60_000);

afterAll(async () => {
  reader.close();
  await other.stop();
  await ledger.stop();
});

describe('Idempotency-Key on real ledger processes', () => {
  it('20 concurrent requests with one key, across two processes on one database: one authorization, one hold, 1 x 201 and 19 replays naming it', async () => {
    const actors = await setUpActors({ url: ledger.url, adminToken }, 'racer');
    const request = (url: string) =>
      fetch(`${url}/authorizations`, {
        method: 'POST',
        headers: { authorization: `Bearer ${actors.agent}`, 'content-type': 'application/json', 'idempotency-key': 'one-job' },
        body: JSON.stringify({ amount_units: '2000000', units_scale: 6, currency: 'USD', purpose: 'one job' }),
      }).then(async (response) => ({ status: response.status, replayed: response.headers.get('idempotent-replayed'), body: (await response.json()) as { authorization: { token_id: string } } }));
    const answers = await Promise.all(Array.from({ length: 20 }, (_, index) => request(index % 2 === 0 ? ledger.url : other.url)));
    expect(answers.map((answer) => answer.status).sort()).toEqual([...Array<number>(19).fill(200), 201]);
    expect(answers.filter((answer) => answer.replayed === 'true')).toHaveLength(19);
    expect(new Set(answers.map((answer) => answer.body.authorization.token_id)).size).toBe(1);
    expect(reader.prepare('SELECT status, amount_units, idempotency_key FROM authorizations WHERE agent_id = ?').all(actors.agentId)).toEqual([
      { status: 'requested', amount_units: 2000000, idempotency_key: 'one-job' },
    ]);
    const spending = await fetch(`${ledger.url}/agent/spending`, { headers: { authorization: `Bearer ${actors.agent}` } });
    expect(((await spending.json()) as { spending: { held_units: string } }).spending.held_units).toBe('2000000');
  });
});
