import { join } from 'node:path';
import type Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { LEDGER_MIGRATIONS } from '../../src/ledger/store/migrations.js';
import { openDatabase } from '../../src/storage/open-database.js';
import { makeTempDir, removeDir } from '../support/cli.js';

/*
 * Ledger migration 7 (credentials have a lifecycle) on a version-6 database: every credential
 * keeps its id, kind, agent, digest and creation time, is active and the first of its own line,
 * never used as far as the ledger knows; a claim keeps the credential that made it.
 */

let dir: string;

beforeEach(async () => {
  dir = await makeTempDir('lexec-ledger-m7-');
});

afterEach(async () => {
  await removeDir(dir);
});

const all = (db: Database.Database, sql: string) => db.prepare(sql).all() as Record<string, unknown>[];

function version6(): string {
  const path = join(dir, 'ledger.db');
  const db = openDatabase(path, LEDGER_MIGRATIONS.filter((migration) => migration.version <= 6));
  db.prepare("INSERT INTO owner (account_id, created_at) VALUES ('acct_1', 0)").run();
  db.prepare("INSERT INTO agents (agent_id, name, status, created_at) VALUES ('agt_a', 'bot', 'active', 1)").run();
  const credential = db.prepare('INSERT INTO credentials (credential_id, kind, agent_id, lookup, digest, created_at) VALUES (?, ?, ?, ?, ?, ?)');
  credential.run('admin', 'admin', null, 'aa', Buffer.alloc(32, 1), 10);
  credential.run('lexec-executor', 'executor', null, 'bb', Buffer.alloc(32, 2), 11);
  credential.run('cred_agent', 'agent', 'agt_a', 'cc', Buffer.alloc(32, 3), 12);
  db.prepare(
    `INSERT INTO authorizations (token_id, account_id, agent_id, amount_units, units_scale, currency, amount_cents, status, execution_id, created_at, claimed_at, expires_at, claimed_by)
     VALUES ('tok_1', 'acct_1', 'agt_a', 100000, 6, 'USD', 10, 'claimed', 'exe_1', 20, 21, 99999, 'lexec-executor')`,
  ).run();
  db.close();
  return path;
}

describe('ledger migration 7 (credentials have a lifecycle)', () => {
  it('keeps every credential as it was, active and first of its line; claims keep their claimant', () => {
    const db = openDatabase(version6(), LEDGER_MIGRATIONS);
    try {
      expect(all(db, "SELECT version FROM schema_migrations WHERE name = 'credentials have a lifecycle'")).toHaveLength(1);
      expect(all(db, 'SELECT credential_id, kind, agent_id, lookup, hex(digest) AS digest, created_at, lineage, rotated_from, replaced_by, last_used_at, revoked_at, holder_name FROM credentials ORDER BY created_at')).toEqual([
        { credential_id: 'admin', kind: 'admin', agent_id: null, lookup: 'aa', digest: '01'.repeat(32), created_at: 10n, lineage: 'admin', rotated_from: null, replaced_by: null, last_used_at: null, revoked_at: null, holder_name: null },
        { credential_id: 'lexec-executor', kind: 'executor', agent_id: null, lookup: 'bb', digest: '02'.repeat(32), created_at: 11n, lineage: 'lexec-executor', rotated_from: null, replaced_by: null, last_used_at: null, revoked_at: null, holder_name: null },
        { credential_id: 'cred_agent', kind: 'agent', agent_id: 'agt_a', lookup: 'cc', digest: '03'.repeat(32), created_at: 12n, lineage: 'cred_agent', rotated_from: null, replaced_by: null, last_used_at: null, revoked_at: null, holder_name: null },
      ]);
      expect(all(db, 'SELECT claimed_by FROM authorizations')).toEqual([{ claimed_by: 'lexec-executor' }]);
      // The rebuilt table keeps its rules: an agent credential needs its agent, a replacement its revocation.
      expect(() => db.prepare("INSERT INTO credentials (credential_id, kind, lookup, digest, created_at, lineage) VALUES ('x', 'agent', 'dd', zeroblob(32), 1, 'x')").run()).toThrow(/CHECK/);
      expect(() => db.prepare("UPDATE credentials SET replaced_by = 'admin' WHERE credential_id = 'cred_agent'").run()).toThrow(/CHECK/);
      expect(() => db.prepare("INSERT INTO credentials (credential_id, kind, lookup, digest, created_at, lineage) VALUES ('y', 'approver', 'aa', zeroblob(32), 1, 'y')").run()).toThrow(/UNIQUE/);
    } finally {
      db.close();
    }
  });
});
