import { join } from 'node:path';
import type Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { LEDGER_MIGRATIONS } from '../../src/ledger/store/migrations.js';
import { openDatabase } from '../../src/storage/open-database.js';
import { makeTempDir, removeDir } from '../support/cli.js';

/*
 * Ledger migration 15 (one-time enrolment tokens for executor hosts) adds `enrolments` and
 * rebuilds `audit_events` for three new actions: every row and id kept, ids continue after the
 * highest ever given, the triggers are back, and a token is redeemed or revoked once at the store
 * itself. Found by name: its number may change when branches merge.
 */

const NAME = 'one-time enrolment tokens for executor hosts';
const M15 = LEDGER_MIGRATIONS.find((migration) => migration.name === NAME);
const BEFORE = LEDGER_MIGRATIONS.filter((migration) => migration.version < (M15?.version ?? 0));

let dir: string;

beforeEach(async () => {
  dir = await makeTempDir('lexec-ledger-m15-');
});

afterEach(async () => {
  await removeDir(dir);
});

const all = (db: Database.Database, sql: string) => db.prepare(sql).all() as Record<string, unknown>[];
const INSERT = 'INSERT INTO audit_events (at, actor_credential_id, actor_kind, action, agent_id, subject_id, before, after, reason) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)';
const ENROLMENT = `INSERT INTO enrolments (enrolment_id, host_name, agent_name, token_lookup, token_digest, issued_by, issued_at, expires_at)
  VALUES ('enr_1', 'builder-1', 'builder-1', '0123456789abcdef', zeroblob(32), 'admin', 1, 100)`;

describe('ledger migration 15 (enrolment tokens)', () => {
  it('keeps every audit row and id, accepts the enrolment actions, and redeems or revokes a token once', () => {
    expect(M15).toBeDefined();
    const path = join(dir, 'ledger.db');
    const old = openDatabase(path, BEFORE);
    const insert = old.prepare(INSERT);
    insert.run(10, null, 'ledger', 'credential_registered', null, 'admin', null, '{"kind":"admin"}', null);
    insert.run(11, 'admin', 'admin', 'webhook_added', null, 'whk_x', null, '{"status":"active"}', null);
    old.prepare("UPDATE sqlite_sequence SET seq = 5 WHERE name = 'audit_events'").run();
    expect(() => insert.run(12, 'admin', 'admin', 'enrolment_issued', null, 'enr_1', null, null, null)).toThrow(/CHECK/);
    const rows = all(old, 'SELECT * FROM audit_events ORDER BY audit_id');
    old.close();

    const db = openDatabase(path, LEDGER_MIGRATIONS);
    try {
      expect(all(db, 'SELECT * FROM audit_events ORDER BY audit_id')).toEqual(rows);
      const added = db.prepare(INSERT);
      for (const action of ['enrolment_issued', 'enrolment_revoked']) added.run(20, 'admin', 'admin', action, null, 'enr_1', null, '{"status":"open"}', null);
      added.run(21, null, 'ledger', 'enrolment_redeemed', null, 'enr_1', null, '{"status":"redeemed"}', null);
      expect(all(db, 'SELECT audit_id FROM audit_events WHERE audit_id > 2 ORDER BY audit_id').map((row) => row.audit_id)).toEqual([6n, 7n, 8n]);
      expect(() => db.prepare('DELETE FROM audit_events WHERE audit_id = 1').run()).toThrow('audit events are never deleted');

      db.prepare(ENROLMENT).run();
      db.prepare("UPDATE enrolments SET revoked_at = 50 WHERE enrolment_id = 'enr_1'").run();
      expect(() => db.prepare("UPDATE enrolments SET revoked_at = 60 WHERE enrolment_id = 'enr_1'").run()).toThrow('an enrolment token is redeemed or revoked once');
      expect(() => db.prepare("DELETE FROM enrolments WHERE enrolment_id = 'enr_1'").run()).toThrow('enrolments are never deleted');
      // A redemption names the credentials it issued; a token is never redeemed and revoked.
      expect(() => db.prepare(ENROLMENT.replace("'enr_1'", "'enr_2'").replace('0123456789abcdef', 'fedcba9876543210').replace('1, 100', '1, 1')).run()).toThrow(/CHECK/);
    } finally {
      db.close();
    }
  });
});
