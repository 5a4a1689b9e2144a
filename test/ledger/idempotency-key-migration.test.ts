import { join } from 'node:path';
import type Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { LEDGER_MIGRATIONS } from '../../src/ledger/store/migrations.js';
import { openDatabase } from '../../src/storage/open-database.js';
import { makeTempDir, removeDir } from '../support/cli.js';
import { call, mintCredential, startTestLedger } from '../support/ledger.js';

/*
 * The ledger migration that gives spend requests an idempotency key, on a database at the schema
 * just before it: every existing authorization keeps a null key and fingerprint (and so never
 * answers a keyed request), and the store itself holds the rules: one open authorization per agent
 * and key, a key always with its fingerprint. Found by its name, never its number (migrations are
 * renumbered when branches merge).
 */

const MIGRATION = LEDGER_MIGRATIONS.findIndex((migration) => migration.name === 'spend requests carry an idempotency key');

let dir: string;

beforeEach(async () => {
  dir = await makeTempDir('lexec-ledger-idempotency-');
});

afterEach(async () => {
  await removeDir(dir);
});

const all = (db: Database.Database, sql: string, ...params: unknown[]) => db.prepare(sql).all(...params) as Record<string, unknown>[];

const insertAuthorization = (db: Database.Database, tokenId: string, status: string, extra: { execution_id?: string } = {}) =>
  db
    .prepare(
      `INSERT INTO authorizations (token_id, account_id, agent_id, amount_units, units_scale, currency, amount_cents, status, execution_id, created_at, expires_at)
       VALUES (?, 'acct_1', 'agt_a', 1000, 6, 'USD', 1, ?, ?, ?, ?)`,
    )
    .run(tokenId, status, extra.execution_id ?? null, Date.now(), Date.now() + 3_600_000);

/** A ledger database at the schema before the migration: an agent with a requested, an approved and a claimed authorization. */
function before(): string {
  const path = join(dir, 'ledger.db');
  const db = openDatabase(path, LEDGER_MIGRATIONS.slice(0, MIGRATION));
  db.prepare("INSERT INTO owner (account_id, created_at) VALUES ('acct_1', 0)").run();
  db.prepare("INSERT INTO agents (agent_id, name, status, created_at) VALUES ('agt_a', 'bot', 'active', 1)").run();
  insertAuthorization(db, 'tok-requested', 'requested');
  insertAuthorization(db, 'tok-approved', 'approved');
  insertAuthorization(db, 'tok-claimed', 'claimed', { execution_id: 'exe_1' });
  db.close();
  return path;
}

describe('ledger migration: spend requests carry an idempotency key', () => {
  it('exists after the migrations before it', () => {
    expect(MIGRATION).toBeGreaterThan(0);
  });

  it('existing authorizations keep a null key and fingerprint; the store allows one open authorization per agent and key, and a key only with its fingerprint', () => {
    const path = before();
    const db = openDatabase(path, LEDGER_MIGRATIONS);
    try {
      expect(all(db, 'SELECT COUNT(*) AS n FROM schema_migrations')).toEqual([{ n: BigInt(LEDGER_MIGRATIONS.length) }]);
      expect(all(db, 'SELECT token_id, status, idempotency_key, request_fingerprint FROM authorizations ORDER BY token_id')).toEqual([
        { token_id: 'tok-approved', status: 'approved', idempotency_key: null, request_fingerprint: null },
        { token_id: 'tok-claimed', status: 'claimed', idempotency_key: null, request_fingerprint: null },
        { token_id: 'tok-requested', status: 'requested', idempotency_key: null, request_fingerprint: null },
      ]);
      // Open rows without a key do not collide with each other.
      insertAuthorization(db, 'tok-unkeyed', 'approved');
      const setKey = db.prepare("UPDATE authorizations SET idempotency_key = 'k', request_fingerprint = 'f' WHERE token_id = ?");
      setKey.run('tok-requested');
      // A second open authorization of the agent under the key is refused by the store itself.
      expect(() => setKey.run('tok-approved')).toThrow(/UNIQUE/);
      // A claimed (or final) one may carry it: the key is free once its authorization is no longer open.
      setKey.run('tok-claimed');
      db.prepare("UPDATE authorizations SET status = 'denied' WHERE token_id = 'tok-requested'").run();
      setKey.run('tok-approved');
      expect(() => db.prepare("UPDATE authorizations SET idempotency_key = 'other' WHERE token_id = 'tok-unkeyed'").run()).toThrow(/CHECK/);
    } finally {
      db.close();
    }
    // Reopening changes nothing.
    const again = openDatabase(path, LEDGER_MIGRATIONS);
    expect(all(again, 'SELECT COUNT(*) AS n FROM schema_migrations')).toEqual([{ n: BigInt(LEDGER_MIGRATIONS.length) }]);
    again.close();
  });

  it('the migrated ledger serves keyed and unkeyed requests: an old open authorization is never the answer to a key', async () => {
    before();
    // The app on the migrated file, as `ledger serve` builds it; the old rows' agent asks.
    const ledger = await startTestLedger({ dir });
    try {
      const token = await mintCredential(ledger, 'agent', 'agt_a');
      const request = (key?: string) =>
        call<{ authorization: { token_id: string; status: string }; replayed: boolean }>(ledger.url, 'POST', '/authorizations', {
          token,
          body: { amount_units: '1000', units_scale: 6, currency: 'USD' },
          ...(key === undefined ? {} : { headers: { 'idempotency-key': key } }),
        });
      const first = await request('job');
      expect(first).toMatchObject({ status: 201, body: { replayed: false, authorization: { status: 'approved' } } });
      expect(['tok-requested', 'tok-approved']).not.toContain(first.body.authorization.token_id);
      expect(await request('job')).toMatchObject({ status: 200, body: { replayed: true, authorization: { token_id: first.body.authorization.token_id } } });
      expect(await request()).toMatchObject({ status: 201, body: { replayed: false } });
    } finally {
      await ledger.close();
    }
  });
});
