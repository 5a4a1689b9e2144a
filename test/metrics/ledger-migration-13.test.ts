import { join } from 'node:path';
import type Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { LEDGER_MIGRATIONS } from '../../src/ledger/store/migrations.js';
import { openDatabase } from '../../src/storage/open-database.js';
import { makeTempDir, removeDir } from '../support/cli.js';

/*
 * Ledger migration 13 (metrics credentials) rebuilds the credentials table for its new kind:
 * every row stays as it was, and migration 7's index and triggers are there again.
 */

let dir: string;

beforeEach(async () => {
  dir = await makeTempDir('lexec-ledger-m13-');
});

afterEach(async () => {
  await removeDir(dir);
});

const all = (db: Database.Database, sql: string) => db.prepare(sql).all() as Record<string, unknown>[];
const COLUMNS = 'credential_id, kind, agent_id, lookup, hex(digest) AS digest, created_at, holder_name, lineage, rotated_from, replaced_by, last_used_at, revoked_at';

describe('ledger migration 13 (metrics credentials)', () => {
  it('keeps every credential as it was, accepts the metrics kind, and keeps the index and both triggers', () => {
    const path = join(dir, 'ledger.db');
    // Every migration before it (by its number, found by name: later ones are tested on their own).
    const m13 = LEDGER_MIGRATIONS.find((migration) => migration.name === 'metrics credentials')?.version ?? 0;
    const before = openDatabase(path, LEDGER_MIGRATIONS.filter((migration) => migration.version < m13));
    before.prepare("INSERT INTO agents (agent_id, name, status, created_at) VALUES ('agt_a', 'bot', 'active', 1)").run();
    const insert = before.prepare('INSERT INTO credentials (credential_id, kind, agent_id, lookup, digest, created_at, holder_name, lineage, rotated_from, replaced_by, last_used_at, revoked_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)');
    insert.run('admin', 'admin', null, 'aa', Buffer.alloc(32, 1), 10, null, 'admin', null, null, 60000, null);
    insert.run('cred_old', 'approver', null, 'bb', Buffer.alloc(32, 2), 11, 'Ada', 'cred_old', null, 'cred_new', null, 500);
    insert.run('cred_new', 'approver', null, 'cc', Buffer.alloc(32, 3), 12, 'Ada', 'cred_old', 'cred_old', null, null, null);
    insert.run('cred_agent', 'agent', 'agt_a', 'dd', Buffer.alloc(32, 4), 13, null, 'cred_agent', null, null, null, null);
    const rows = all(before, `SELECT ${COLUMNS} FROM credentials ORDER BY created_at`);
    expect(() => insert.run('m', 'metrics', null, 'ee', Buffer.alloc(32, 5), 14, null, 'm', null, null, null, null)).toThrow(/CHECK/);
    before.close();

    const db = openDatabase(path, LEDGER_MIGRATIONS);
    try {
      expect(all(db, `SELECT ${COLUMNS} FROM credentials ORDER BY created_at`)).toEqual(rows);
      db.prepare('INSERT INTO credentials (credential_id, kind, agent_id, lookup, digest, created_at, lineage) VALUES (?, ?, ?, ?, ?, ?, ?)').run('m', 'metrics', null, 'ee', Buffer.alloc(32, 5), 14, 'm');
      expect(all(db, "SELECT name FROM sqlite_master WHERE tbl_name = 'credentials' AND type IN ('index', 'trigger') AND sql IS NOT NULL ORDER BY name")).toEqual([
        { name: 'credential_secrets_are_fixed' },
        { name: 'credentials_are_kept' },
        { name: 'credentials_by_lineage' },
      ]);
      expect(() => db.prepare("UPDATE credentials SET kind = 'admin' WHERE credential_id = 'm'").run()).toThrow(/identity never changes/);
      expect(() => db.prepare("DELETE FROM credentials WHERE credential_id = 'm'").run()).toThrow(/never deleted/);
      expect(() => db.prepare("INSERT INTO credentials (credential_id, kind, lookup, digest, created_at, lineage) VALUES ('x', 'agent', 'ff', zeroblob(32), 1, 'x')").run()).toThrow(/CHECK/);
    } finally {
      db.close();
    }
  });
});
