import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import type Database from 'better-sqlite3';
import { pino } from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { composeLedger } from '../../src/ledger/compose-ledger.js';
import { LEDGER_MIGRATIONS } from '../../src/ledger/store/migrations.js';
import { openDatabase } from '../../src/storage/open-database.js';
import { makeTempDir, removeDir } from '../support/cli.js';
import { DEFAULT_POLICY, TEST_ADMIN } from '../support/ledger.js';

/*
 * Ledger migration 5 (agent suspension) on a database of the previous version: the agents and
 * the authorizations are rebuilt with their new CHECK constraints (SQLite's create, copy, drop,
 * rename, with foreign-key enforcement off and `foreign_key_check` before the commit), every row
 * is kept as it was, and an agent in the old schema's never-used `disabled` status becomes a
 * suspended one whose unclaimed authorizations are cancelled. The store itself then keeps a
 * cancelled authorization unclaimed and final.
 */

let dir: string;

beforeEach(async () => {
  dir = await makeTempDir('lexec-ledger-m5-');
});

afterEach(async () => {
  await removeDir(dir);
});

const FAR = 9_999_999_999_999;
const tokens = {
  approved: randomUUID(),
  requested: randomUUID(),
  claimed: randomUUID(),
  settled: randomUUID(),
  released: randomUUID(),
  parked: randomUUID(),
  disabledApproved: randomUUID(),
  disabledClaimed: randomUUID(),
};

/** A version-4 ledger database with an active and a `disabled` agent and authorizations in every state. */
function version4(): string {
  const path = join(dir, 'ledger.db');
  const db = openDatabase(path, LEDGER_MIGRATIONS.filter((migration) => migration.version <= 4));
  db.prepare("INSERT INTO owner (account_id, created_at) VALUES ('acct_1', 0)").run();
  db.prepare("INSERT INTO agents (agent_id, name, status, created_at) VALUES ('agt_a', 'active-bot', 'active', 1)").run();
  db.prepare("INSERT INTO agents (agent_id, name, status, created_at) VALUES ('agt_d', 'disabled-bot', 'disabled', 2)").run();
  db.prepare("INSERT INTO policies VALUES ('agt_a', 5000000, 20000000, 1000000, 6, 'USD', 1, 0, 1)").run();
  db.prepare("INSERT INTO credentials VALUES ('cred_e', 'executor', NULL, 'lookup_e', x'00', 0)").run();
  const insert = db.prepare(
    `INSERT INTO authorizations (token_id, account_id, agent_id, amount_units, units_scale, currency, amount_cents, status, purpose, execution_id, created_at, claimed_at, expires_at,
       policy_version, policy_per_authorization_cap_units, policy_daily_cap_units, policy_approval_threshold_units, claimed_by)
     VALUES (?, 'acct_1', ?, 900000, 6, 'USD', 90, ?, 'a poster', ?, ?, ?, ${String(FAR)}, 1, 5000000, 20000000, 1000000, ?)`,
  );
  const row = (token: string, agent: string, status: string, execution: string | null, at: number) =>
    insert.run(token, agent, status, execution, at, execution === null ? null : at, execution === null ? null : 'cred_e');
  row(tokens.approved, 'agt_a', 'approved', null, 10);
  row(tokens.requested, 'agt_a', 'requested', null, 11);
  row(tokens.claimed, 'agt_a', 'claimed', 'exe_claimed', 12);
  row(tokens.settled, 'agt_a', 'settled', 'exe_settled', 13);
  row(tokens.released, 'agt_a', 'released', 'exe_released', 14);
  row(tokens.parked, 'agt_a', 'claimed', 'exe_parked', 15);
  row(tokens.disabledApproved, 'agt_d', 'approved', null, 16);
  row(tokens.disabledClaimed, 'agt_d', 'claimed', 'exe_disabled', 17);
  db.prepare(
    `INSERT INTO settlements VALUES ('stl_1', ?, 'rcpt_1', 'exe_settled', 'precise', 300000, 6, 'USD', 30, 'req_1', '{}', 'fp', 20)`,
  ).run(tokens.settled);
  db.prepare("INSERT INTO releases VALUES ('rel_1', ?, 'exe_released', 'not_transmitted', 21)").run(tokens.released);
  db.prepare("INSERT INTO reconciliation_records (record_id, token_id, execution_id, reason, evidence, status, created_at) VALUES ('rec_1', ?, 'exe_parked', 'billing_ambiguous', '{}', 'open', 22)").run(
    tokens.parked,
  );
  db.close();
  return path;
}

const all = (db: Database.Database, sql: string) => db.prepare(sql).all() as Record<string, unknown>[];

describe('ledger migration 5 (agents can be suspended, authorizations cancelled)', () => {
  it('keeps every row, turns a disabled agent into a suspended one and cancels its unclaimed authorizations; references, triggers and indexes hold', () => {
    const path = version4();
    const old = openDatabase(path, LEDGER_MIGRATIONS.filter((migration) => migration.version <= 4));
    const before = {
      authorizations: all(old, 'SELECT * FROM authorizations ORDER BY token_id'),
      settlements: all(old, 'SELECT * FROM settlements'),
      releases: all(old, 'SELECT * FROM releases'),
      records: all(old, 'SELECT * FROM reconciliation_records'),
      policies: all(old, 'SELECT * FROM policies'),
      credentials: all(old, 'SELECT * FROM credentials'),
    };
    old.close();

    // Up to this migration: later ones are tested on their own (ledger-migration-6.test.ts).
    const throughFive = LEDGER_MIGRATIONS.filter((migration) => migration.version <= 5);
    const db = openDatabase(path, throughFive);
    try {
      expect(all(db, 'SELECT version FROM schema_migrations ORDER BY version').map((row) => row.version)).toEqual([1n, 2n, 3n, 4n, 5n]);
      const agents = all(db, 'SELECT agent_id, name, status, created_at, suspension_reason, suspended_at IS NOT NULL AS since FROM agents ORDER BY agent_id');
      expect(agents).toEqual([
        { agent_id: 'agt_a', name: 'active-bot', status: 'active', created_at: 1n, suspension_reason: null, since: 0n },
        { agent_id: 'agt_d', name: 'disabled-bot', status: 'suspended', created_at: 2n, suspension_reason: null, since: 1n },
      ]);

      // Every authorization as it was, with the new column; the disabled agent's unclaimed one cancelled.
      const after = all(db, 'SELECT * FROM authorizations ORDER BY token_id');
      expect(after).toHaveLength(before.authorizations.length);
      for (const [index, row] of after.entries()) {
        const previous = before.authorizations[index] ?? {};
        if (row.token_id === tokens.disabledApproved) {
          expect(row).toEqual({ ...previous, status: 'cancelled', cancellation_reason: 'agent_suspended', closed_at: (expect.any(BigInt) as unknown) });
        } else {
          expect(row).toEqual({ ...previous, cancellation_reason: null });
        }
      }
      expect({
        settlements: all(db, 'SELECT * FROM settlements'),
        releases: all(db, 'SELECT * FROM releases'),
        records: all(db, 'SELECT * FROM reconciliation_records'),
        policies: all(db, 'SELECT * FROM policies'),
        credentials: all(db, 'SELECT * FROM credentials'),
      }).toEqual({ settlements: before.settlements, releases: before.releases, records: before.records, policies: before.policies, credentials: before.credentials });

      expect(db.pragma('foreign_key_check')).toEqual([]);
      expect(db.pragma('integrity_check', { simple: true })).toBe('ok');
      expect(db.pragma('foreign_keys', { simple: true })).toBe(1n);
      const names = all(db, "SELECT name FROM sqlite_master WHERE type IN ('index', 'trigger') AND name NOT LIKE 'sqlite_%' ORDER BY name").map((row) => row.name);
      expect(names).toEqual([
        'authorizations_by_agent',
        'authorizations_by_status',
        'authorizations_claims_by_credential',
        'cancellations_are_final',
        'one_open_record_per_authorization',
        'release_never_after_settle',
        'settle_never_after_release',
        'settlements_are_final',
        'settlements_are_kept',
      ]);

      // The references point at the rebuilt tables: an authorization of an unknown agent, a settlement of an unknown token are refused.
      expect(() => db.prepare(`INSERT INTO authorizations (token_id, account_id, agent_id, amount_units, units_scale, currency, amount_cents, status, created_at, expires_at)
        VALUES ('tok_x', 'acct_1', 'agt_nobody', 1, 6, 'USD', 1, 'approved', 0, 1)`).run()).toThrow(/FOREIGN KEY/);
      expect(() => db.prepare("INSERT INTO releases VALUES ('rel_x', 'tok_nobody', NULL, 'cancelled', 0)").run()).toThrow(/FOREIGN KEY/);
      // Settle XOR release still holds in the store.
      expect(() => db.prepare(`INSERT INTO settlements VALUES ('stl_2', ?, 'rcpt_2', 'exe_released', 'precise', 1, 6, 'USD', 1, 'req_2', '{}', 'fp2', 30)`).run(tokens.released)).toThrow(
        /already released/,
      );
      // A cancelled authorization is final and never claimed.
      expect(() => db.prepare("UPDATE authorizations SET status = 'approved', cancellation_reason = NULL WHERE token_id = ?").run(tokens.disabledApproved)).toThrow(/final/);
      expect(() => db.prepare("UPDATE authorizations SET execution_id = 'exe_late' WHERE token_id = ?").run(tokens.disabledApproved)).toThrow(/CHECK/);
      expect(() => db.prepare("UPDATE authorizations SET status = 'cancelled' WHERE token_id = ?").run(tokens.approved)).toThrow(/CHECK/);
      expect(() => db.prepare("UPDATE agents SET status = 'disabled' WHERE agent_id = 'agt_a'").run()).toThrow(/CHECK/);
    } finally {
      db.close();
    }

    // Reopening changes nothing.
    const again = openDatabase(path, throughFive);
    expect(all(again, 'SELECT COUNT(*) AS n FROM schema_migrations')).toEqual([{ n: 5n }]);
    again.close();
  });

  it('the migrated ledger serves: the suspended agent is refused, the active one requests, and the suspension can be lifted', async () => {
    const path = version4();
    const composed = await composeLedger({
      config: { database_path: path, admin_capability_path: join(dir, 'credentials', 'admin.capability'), contract_level: 'v4.5', authorization_ttl_seconds: 3600, default_policy: DEFAULT_POLICY },
      logger: pino({ level: 'silent' }),
    });
    try {
      const { service, admin } = composed;
      expect(admin.listAgents().map((agent) => [agent.agent_id, agent.status])).toEqual([
        ['agt_a', 'active'],
        ['agt_d', 'suspended'],
      ]);
      expect(() => service.requestAuthorization('agt_d', { amount_units: 1000n, currency: 'USD' })).toThrow(/agent_suspended/);
      expect(service.requestAuthorization('agt_a', { amount_units: 1000n, currency: 'USD' }).authorization.status).toBe('approved');
      expect(service.show(tokens.disabledApproved)).toMatchObject({ status: 'cancelled', cancellation: { reason: 'agent_suspended' } });
      expect(service.resumeAgent('agt_d', TEST_ADMIN)).toMatchObject({ agent: { status: 'active' }, changed: true });
      expect(service.requestAuthorization('agt_d', { amount_units: 1000n, currency: 'USD' }).authorization.status).toBe('approved');
    } finally {
      composed.close();
    }
  });

  it('a migration that rebuilds tables and loses a referenced row refuses the whole upgrade, leaving the database as it was', () => {
    const path = join(dir, 'rebuild.db');
    const first = [{ version: 1, name: 'tables', up: 'CREATE TABLE parents (id TEXT PRIMARY KEY); CREATE TABLE children (id TEXT PRIMARY KEY, parent_id TEXT NOT NULL REFERENCES parents (id));' }];
    const db = openDatabase(path, first);
    db.exec("INSERT INTO parents VALUES ('p1'), ('p2'); INSERT INTO children VALUES ('c1', 'p1'), ('c2', 'p2')");
    db.close();
    const lossy = {
      version: 2,
      name: 'rebuild that drops a parent',
      rebuildsTables: true,
      up: "CREATE TABLE parents_v2 (id TEXT PRIMARY KEY); INSERT INTO parents_v2 SELECT id FROM parents WHERE id = 'p1'; DROP TABLE parents; ALTER TABLE parents_v2 RENAME TO parents;",
    };
    expect(() => openDatabase(path, [...first, lossy])).toThrow(/foreign key/);
    const kept = openDatabase(path, first);
    expect(all(kept, 'SELECT id FROM parents ORDER BY id')).toEqual([{ id: 'p1' }, { id: 'p2' }]);
    expect(all(kept, 'SELECT version FROM schema_migrations')).toEqual([{ version: 1n }]);
    expect(kept.pragma('foreign_keys', { simple: true })).toBe(1n);
    kept.close();
  });
});
