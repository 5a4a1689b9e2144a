import { join } from 'node:path';
import type Database from 'better-sqlite3';
import { pino } from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { composeLedger } from '../../src/ledger/compose-ledger.js';
import { LEDGER_MIGRATIONS } from '../../src/ledger/store/migrations.js';
import { openDatabase } from '../../src/storage/open-database.js';
import { makeTempDir, removeDir } from '../support/cli.js';
import { DEFAULT_POLICY } from '../support/ledger.js';

/*
 * The audit migration on a database of the schema before it: every table keeps its rows, the
 * trail starts empty (nothing before it was recorded, nothing is made up), and the migrated
 * ledger records from its first start on — the ledger's own acts at start included: its admin
 * credential and the configured default applied to an agent that follows it, with the policy
 * before and after. A start that changes nothing records nothing. Found by name, not number:
 * another migration may be numbered before it when branches merge.
 */

const AUDIT = LEDGER_MIGRATIONS.find((migration) => migration.name === 'operator actions are audited');
const BEFORE_AUDIT = LEDGER_MIGRATIONS.filter((migration) => migration.version < (AUDIT?.version ?? 0));
/** Through the audit migration: later ones are tested on their own. */
const THROUGH_AUDIT = LEDGER_MIGRATIONS.filter((migration) => migration.version <= (AUDIT?.version ?? 0));

let dir: string;

beforeEach(async () => {
  dir = await makeTempDir('lexec-ledger-audit-migration-');
});

afterEach(async () => {
  await removeDir(dir);
});

const all = (db: Database.Database, sql: string) => db.prepare(sql).all() as Record<string, unknown>[];
const tables = (db: Database.Database) =>
  Object.fromEntries(['owner', 'agents', 'policies', 'credentials', 'authorizations'].map((table) => [table, all(db, `SELECT * FROM ${table} ORDER BY rowid`)]));

/** A database at the schema before the audit trail: an agent following the default, one suspended with its own policy, a decided authorization. */
function previousSchema(): string {
  const path = join(dir, 'ledger.db');
  const db = openDatabase(path, BEFORE_AUDIT);
  db.prepare("INSERT INTO owner (account_id, created_at) VALUES ('acct_1', 0)").run();
  db.prepare("INSERT INTO agents (agent_id, name, status, created_at) VALUES ('agt_f', 'follower', 'active', 1)").run();
  db.prepare("INSERT INTO agents (agent_id, name, status, created_at, suspended_at, suspension_reason, suspended_by) VALUES ('agt_s', 'held', 'suspended', 2, 5, 'by hand', 'operator')").run();
  db.prepare("INSERT INTO policies (agent_id, per_authorization_cap_units, daily_cap_units, approval_threshold_units, units_scale, currency, version, updated_at, follows_default) VALUES ('agt_f', 5000000, 20000000, 1000000, 6, 'USD', 1, 0, 1)").run();
  db.prepare("INSERT INTO policies (agent_id, per_authorization_cap_units, daily_cap_units, approval_threshold_units, units_scale, currency, version, updated_at, follows_default) VALUES ('agt_s', 4000000, 10000000, 0, 6, 'USD', 3, 0, 0)").run();
  db.prepare(
    `INSERT INTO authorizations (token_id, account_id, agent_id, amount_units, units_scale, currency, amount_cents, status, decided_by, created_at, decided_at, expires_at)
     VALUES ('tok_1', 'acct_1', 'agt_f', 2000000, 6, 'USD', 200, 'approved', 'cred_approver', 3, 4, 9999999999999)`,
  ).run();
  db.close();
  return path;
}

function compose(path: string, defaultPolicy = DEFAULT_POLICY) {
  return composeLedger({
    config: { database_path: path, admin_capability_path: join(dir, 'credentials', 'admin.capability'), contract_level: 'v4.5', authorization_ttl_seconds: 3600, default_policy: defaultPolicy },
    logger: pino({ level: 'silent' }),
  });
}

describe('the audit migration', () => {
  it('keeps every row, starts an empty append-only trail, and records nothing that happened before it', () => {
    expect(AUDIT).toBeDefined();
    const path = previousSchema();
    const old = openDatabase(path, BEFORE_AUDIT);
    const before = tables(old);
    old.close();

    const db = openDatabase(path, THROUGH_AUDIT);
    try {
      expect(all(db, 'SELECT name FROM schema_migrations ORDER BY version').at(-1)).toEqual({ name: 'operator actions are audited' });
      expect(tables(db)).toEqual(before);
      expect(all(db, 'SELECT COUNT(*) AS n FROM audit_events')).toEqual([{ n: 0n }]);
      expect(all(db, "SELECT name FROM sqlite_master WHERE tbl_name = 'audit_events' AND type IN ('index', 'trigger') AND sql IS NOT NULL ORDER BY name")).toEqual([
        { name: 'audit_events_are_final' },
        { name: 'audit_events_are_kept' },
        { name: 'audit_events_by_agent' },
        { name: 'audit_events_by_time' },
      ]);
      expect(() => db.prepare("INSERT INTO audit_events (at, actor_credential_id, actor_kind, action, agent_id, subject_id) VALUES (1, 'admin', 'admin', 'agent_added', 'agt_nobody', 'x')").run()).toThrow(/FOREIGN KEY/);
    } finally {
      db.close();
    }
  });

  it('the migrated ledger records its own acts at start (its admin credential, a changed default applied) and every action after; a start that changes nothing records nothing', async () => {
    const path = previousSchema();
    const lowered = { ...DEFAULT_POLICY, approval_threshold_units: 5_000n };
    const first = await compose(path, lowered);
    try {
      expect(first.defaultPolicyAppliedTo).toBe(1);
      const { events } = first.service.auditTrail({ since: null, after: null, agentId: null, limit: 100 });
      expect(events.map((event) => [event.action, event.actor_kind, event.actor_credential_id, event.subject_id])).toEqual([
        ['credential_registered', 'ledger', null, 'admin'],
        ['policy_changed', 'ledger', null, 'agt_f'],
      ]);
      expect(events[1]).toMatchObject({
        agent_id: 'agt_f',
        before: { version: '1', source: 'default', approval_threshold_units: '1000000' },
        after: { version: '2', source: 'default', approval_threshold_units: '5000' },
      });
      expect(first.service.resumeAgent('agt_s', { credential_id: 'admin', kind: 'admin' }).changed).toBe(true);
    } finally {
      first.close();
    }
    const again = await compose(path, lowered);
    try {
      const { events } = again.service.auditTrail({ since: null, after: null, agentId: null, limit: 100 });
      expect(events.map((event) => event.action)).toEqual(['credential_registered', 'policy_changed', 'agent_resumed']);
      expect(events[2]).toMatchObject({ before: { status: 'suspended', suspended_by: 'operator', suspended_at: new Date(5).toISOString() }, after: { status: 'active' } });
    } finally {
      again.close();
    }
  });
});
