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
 * Ledger migration 6 (velocity limits, the runaway-loop breaker) on a version-5 database: every
 * policy keeps its caps and has no velocity limit, an existing suspension is marked as an
 * operator's, the request log starts empty; the store refuses a breaker without a limit and a
 * `suspended_by` on an active agent. The migrated ledger serves as before.
 */

let dir: string;

beforeEach(async () => {
  dir = await makeTempDir('lexec-ledger-m6-');
});

afterEach(async () => {
  await removeDir(dir);
});

const all = (db: Database.Database, sql: string) => db.prepare(sql).all() as Record<string, unknown>[];

/** A version-5 ledger database: an active agent and one an operator suspended, both with policies. */
function version5(): string {
  const path = join(dir, 'ledger.db');
  const db = openDatabase(path, LEDGER_MIGRATIONS.filter((migration) => migration.version <= 5));
  db.prepare("INSERT INTO owner (account_id, created_at) VALUES ('acct_1', 0)").run();
  db.prepare("INSERT INTO agents (agent_id, name, status, created_at) VALUES ('agt_a', 'active-bot', 'active', 1)").run();
  db.prepare("INSERT INTO agents (agent_id, name, status, created_at, suspended_at, suspension_reason) VALUES ('agt_s', 'held-bot', 'suspended', 2, 5, 'by hand')").run();
  db.prepare("INSERT INTO policies VALUES ('agt_a', 5000000, 20000000, 1000000, 6, 'USD', 1, 0, 1)").run();
  db.prepare("INSERT INTO policies VALUES ('agt_s', 4000000, 10000000, 0, 6, 'USD', 3, 0, 0)").run();
  db.close();
  return path;
}

describe('ledger migration 6 (velocity limits and the runaway-loop breaker)', () => {
  it('keeps every policy without a limit, marks an existing suspension as the operator\'s, starts an empty request log; the store holds its rules', () => {
    const path = version5();
    // Up to this migration: later ones are tested on their own (ledger-migration-audit.test.ts).
    const throughSix = LEDGER_MIGRATIONS.filter((migration) => migration.version <= 6);
    const db = openDatabase(path, throughSix);
    try {
      expect(all(db, 'SELECT MAX(version) AS v FROM schema_migrations')).toEqual([{ v: 6n }]);
      expect(all(db, 'SELECT agent_id, status, suspended_at, suspension_reason, suspended_by FROM agents ORDER BY agent_id')).toEqual([
        { agent_id: 'agt_a', status: 'active', suspended_at: null, suspension_reason: null, suspended_by: null },
        { agent_id: 'agt_s', status: 'suspended', suspended_at: 5n, suspension_reason: 'by hand', suspended_by: 'operator' },
      ]);
      expect(all(db, 'SELECT agent_id, per_authorization_cap_units, version, max_requests_per_minute, max_requests_per_hour, suspend_after_velocity_refusals FROM policies ORDER BY agent_id')).toEqual([
        { agent_id: 'agt_a', per_authorization_cap_units: 5000000n, version: 1n, max_requests_per_minute: null, max_requests_per_hour: null, suspend_after_velocity_refusals: null },
        { agent_id: 'agt_s', per_authorization_cap_units: 4000000n, version: 3n, max_requests_per_minute: null, max_requests_per_hour: null, suspend_after_velocity_refusals: null },
      ]);
      expect(all(db, 'SELECT COUNT(*) AS n FROM agent_requests')).toEqual([{ n: 0n }]);
      expect(() => db.prepare("UPDATE policies SET suspend_after_velocity_refusals = 3 WHERE agent_id = 'agt_a'").run()).toThrow(/CHECK/);
      expect(() => db.prepare("UPDATE policies SET max_requests_per_minute = 0 WHERE agent_id = 'agt_a'").run()).toThrow(/CHECK/);
      expect(() => db.prepare("UPDATE agents SET suspended_by = 'velocity_breaker' WHERE agent_id = 'agt_a'").run()).toThrow(/CHECK/);
      expect(() => db.prepare("INSERT INTO agent_requests VALUES ('agt_nobody', 1, 0)").run()).toThrow(/FOREIGN KEY/);
    } finally {
      db.close();
    }
    // Reopening changes nothing.
    const again = openDatabase(path, throughSix);
    expect(all(again, 'SELECT COUNT(*) AS n FROM schema_migrations')).toEqual([{ n: 6n }]);
    again.close();
  });

  it('the migrated ledger serves as before: no limit counts anything, the suspended agent is refused as an operator\'s', async () => {
    const path = version5();
    const composed = await composeLedger({
      config: { database_path: path, admin_capability_path: join(dir, 'credentials', 'admin.capability'), contract_level: 'v4.5', authorization_ttl_seconds: 3600, default_policy: DEFAULT_POLICY },
      logger: pino({ level: 'silent' }),
    });
    try {
      const { service, admin } = composed;
      expect(admin.listAgents().map((agent) => [agent.agent_id, agent.status, agent.suspended_by])).toEqual([
        ['agt_a', 'active', null],
        ['agt_s', 'suspended', 'operator'],
      ]);
      for (let index = 0; index < 5; index += 1) expect(service.requestAuthorization('agt_a', { amount_units: 1000n, currency: 'USD' }).authorization.status).toBe('approved');
      let refusal: unknown;
      try {
        service.requestAuthorization('agt_s', { amount_units: 1000n, currency: 'USD' });
      } catch (error) {
        refusal = error;
      }
      expect(refusal).toMatchObject({ kind: 'forbidden', reasonCode: 'agent_suspended', details: undefined });
    } finally {
      composed.close();
    }
    const db = openDatabase(path, LEDGER_MIGRATIONS);
    expect(all(db, 'SELECT COUNT(*) AS n FROM agent_requests')).toEqual([{ n: 0n }]);
    db.close();
  });
});
