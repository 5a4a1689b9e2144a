import { join } from 'node:path';
import type Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { LEDGER_MIGRATIONS } from '../../src/ledger/store/migrations.js';
import { openDatabase } from '../../src/storage/open-database.js';
import { makeTempDir, removeDir } from '../support/cli.js';

/*
 * Ledger migration 14 (webhook sinks and the installation budget are audited) rebuilds
 * `audit_events` for its three new actions: every row stays as it was, with its id — an
 * installation budget change audited before it as `policy_changed` included (history is not
 * rewritten) — ids continue after the highest ever given, and the indexes and both append-only
 * triggers are there again. Found by name: its number may change when branches merge.
 */

const NAME = 'webhook sinks and the installation budget are audited';
const M14 = LEDGER_MIGRATIONS.find((migration) => migration.name === NAME);
const BEFORE = LEDGER_MIGRATIONS.filter((migration) => migration.version < (M14?.version ?? 0));

let dir: string;

beforeEach(async () => {
  dir = await makeTempDir('lexec-ledger-m14-');
});

afterEach(async () => {
  await removeDir(dir);
});

const all = (db: Database.Database, sql: string) => db.prepare(sql).all() as Record<string, unknown>[];
const INSERT = 'INSERT INTO audit_events (at, actor_credential_id, actor_kind, action, agent_id, subject_id, before, after, reason) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)';
const sequence = (db: Database.Database) => all(db, "SELECT name, seq FROM sqlite_sequence WHERE name LIKE 'audit_events%'");

describe('ledger migration 14 (webhook sinks and the installation budget are audited)', () => {
  it('keeps every audit row and its id, continues the ids after the highest ever given, and keeps the indexes and both triggers', () => {
    expect(M14).toBeDefined();
    const path = join(dir, 'ledger.db');
    const old = openDatabase(path, BEFORE);
    old.prepare("INSERT INTO agents (agent_id, name, status, created_at) VALUES ('agt_a', 'bot', 'active', 1)").run();
    const insert = old.prepare(INSERT);
    insert.run(10, null, 'ledger', 'credential_registered', null, 'admin', null, '{"kind":"admin"}', null);
    insert.run(11, 'admin', 'admin', 'agent_added', 'agt_a', 'agt_a', null, '{"name":"bot","status":"active","policy_version":"1"}', null);
    insert.run(12, 'admin', 'admin', 'agent_suspended', 'agt_a', 'agt_a', '{"status":"active"}', '{"status":"suspended"}', 'runaway loop');
    const budget = '{"version":"2","day_budget_units":null,"week_budget_units":null,"month_budget_units":"9000000","alert_percentages":"50,80,100"}';
    insert.run(13, 'admin', 'admin', 'policy_changed', null, 'installation_budget', '{"version":"1"}', budget, null);
    // An id given once and not kept (a counter ahead of the rows): the rebuilt table must not give it again.
    old.prepare("UPDATE sqlite_sequence SET seq = 7 WHERE name = 'audit_events'").run();
    expect(() => insert.run(14, 'admin', 'admin', 'webhook_added', null, 'whk_x', null, null, null)).toThrow(/CHECK/);
    const rows = all(old, 'SELECT * FROM audit_events ORDER BY audit_id');
    expect(rows.map((row) => row.audit_id)).toEqual([1n, 2n, 3n, 4n]);
    old.close();

    const db = openDatabase(path, LEDGER_MIGRATIONS);
    try {
      expect(all(db, 'SELECT * FROM audit_events ORDER BY audit_id')).toEqual(rows);
      expect(all(db, "SELECT action, subject_id, after FROM audit_events WHERE subject_id = 'installation_budget'")).toEqual([{ action: 'policy_changed', subject_id: 'installation_budget', after: budget }]);
      expect(sequence(db)).toEqual([{ name: 'audit_events', seq: 7n }]);
      const added = db.prepare(INSERT);
      for (const action of ['webhook_added', 'webhook_removed', 'budget_changed']) added.run(20, 'admin', 'admin', action, null, 'x', null, '{"status":"active"}', null);
      expect(all(db, 'SELECT audit_id, action FROM audit_events WHERE audit_id > 4 ORDER BY audit_id')).toEqual([
        { audit_id: 8n, action: 'webhook_added' },
        { audit_id: 9n, action: 'webhook_removed' },
        { audit_id: 10n, action: 'budget_changed' },
      ]);
      expect(all(db, "SELECT name FROM sqlite_master WHERE tbl_name = 'audit_events' AND type IN ('index', 'trigger') AND sql IS NOT NULL ORDER BY name")).toEqual([
        { name: 'audit_events_are_final' },
        { name: 'audit_events_are_kept' },
        { name: 'audit_events_by_agent' },
        { name: 'audit_events_by_time' },
      ]);
      expect(() => db.prepare("UPDATE audit_events SET reason = 'rewritten' WHERE audit_id = 3").run()).toThrow('audit events are append-only');
      expect(() => db.prepare('DELETE FROM audit_events WHERE audit_id = 1').run()).toThrow('audit events are never deleted');
      expect(() => added.run(21, 'admin', 'admin', 'agent_deleted', null, 'x', null, null, null)).toThrow(/CHECK/);
      expect(() => added.run(21, null, 'admin', 'budget_changed', null, 'x', null, null, null)).toThrow(/CHECK/);
      expect(() => added.run(21, 'admin', 'admin', 'budget_changed', null, 'x', '[1]', null, null)).toThrow(/CHECK/);
      expect(() => added.run(21, 'admin', 'admin', 'budget_changed', null, 'x', null, null, 'x'.repeat(501))).toThrow(/CHECK/);
      expect(() => added.run(21, 'admin', 'admin', 'agent_added', 'agt_nobody', 'x', null, null, null)).toThrow(/FOREIGN KEY/);
    } finally {
      db.close();
    }
  });

  it('on a ledger whose trail is still empty: no counter is made up, the first id is 1', () => {
    const path = join(dir, 'ledger.db');
    openDatabase(path, BEFORE).close();
    const db = openDatabase(path, LEDGER_MIGRATIONS);
    try {
      expect(sequence(db)).toEqual([]);
      db.prepare(INSERT).run(1, 'admin', 'admin', 'budget_changed', null, 'installation_budget', null, null, null);
      expect(all(db, 'SELECT audit_id FROM audit_events')).toEqual([{ audit_id: 1n }]);
    } finally {
      db.close();
    }
  });
});
