import { join } from 'node:path';
import type Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { WINDOW_SUMS } from '../../src/ledger/store/counted-units.js';
import { createBudgetStore } from '../../src/ledger/store/budget-store.js';
import { LEDGER_MIGRATIONS } from '../../src/ledger/store/migrations.js';
import { openDatabase } from '../../src/storage/open-database.js';
import { makeTempDir, removeDir } from '../support/cli.js';

/*
 * Ledger migration 17 (what the caps and budgets count, read from an index alone): the settled
 * amount is copied onto the authorization (`settled_units`) — filled in for the settlements made
 * before it, by a trigger for every one after, and no other value accepted — and every window sum
 * a spend request makes reads its covering index only. The sums must be what they were: each is
 * compared with the same sum over the settlements table, as the ledger read it before. Found by
 * name: its number may change when branches merge.
 */

const NAME = 'what the caps and budgets count, read from an index alone';
const M17 = LEDGER_MIGRATIONS.find((migration) => migration.name === NAME);
const BEFORE = LEDGER_MIGRATIONS.filter((migration) => migration.version < (M17?.version ?? 0));

let dir: string;

beforeEach(async () => {
  dir = await makeTempDir('lexec-ledger-m17-');
});

afterEach(async () => {
  await removeDir(dir);
});

const NOW = 1_800_000_000_000;
const all = (db: Database.Database, sql: string, ...params: unknown[]) => db.prepare(sql).all(...params) as Record<string, unknown>[];

function insertAuthorization(db: Database.Database, row: { token: string; agent: string; target: string | null; units: number; status: string; createdAt: number; expiresAt: number }) {
  const execution = ['claimed', 'settled', 'released'].includes(row.status) ? `exe_${row.token}` : null;
  db.prepare(
    `INSERT INTO authorizations (token_id, account_id, agent_id, amount_units, units_scale, currency, amount_cents, status, execution_id, created_at, expires_at, target_id)
     VALUES (?, 'acct_1', ?, ?, 6, 'USD', ?, ?, ?, ?, ?, ?)`,
  ).run(row.token, row.agent, row.units, Math.ceil(row.units / 10_000), row.status, execution, row.createdAt, row.expiresAt, row.target);
}

function insertSettlement(db: Database.Database, token: string, units: number, at: number) {
  db.prepare(
    `INSERT INTO settlements (settlement_id, token_id, receipt_id, execution_id, receipt_shape, amount_units, units_scale, currency, amount_cents, price_model_snapshot, receipt_fingerprint, created_at)
     VALUES (?, ?, ?, ?, 'precise', ?, 6, 'USD', ?, '{}', ?, ?)`,
  ).run(`stl_${token}`, token, `rcpt_${token}`, `exe_${token}`, units, Math.ceil(units / 10_000), `fp_${token}`, at);
}

/**
 * A history across two agents and two targets: settled for less than held, held (requested,
 * approved, claimed), expired by time but not yet persisted, released, denied — some inside the
 * windows, some before them.
 */
function history(db: Database.Database) {
  db.prepare("INSERT INTO owner (account_id, created_at) VALUES ('acct_1', 0)").run();
  db.prepare("INSERT INTO agents (agent_id, name, status, created_at) VALUES ('agt_a', 'a', 'active', 1), ('agt_b', 'b', 'active', 1)").run();
  let n = 0;
  const add = (agent: string, target: string | null, units: number, status: string, ageMs: number, settledUnits?: number, expiresInMs = 3_600_000) => {
    n += 1;
    const token = `tok_${n}`;
    insertAuthorization(db, { token, agent, target, units, status, createdAt: NOW - ageMs, expiresAt: NOW + expiresInMs });
    if (settledUnits !== undefined) insertSettlement(db, token, settledUnits, NOW - ageMs + 1_000);
  };
  for (const [agent, target] of [['agt_a', 'tgt_x'], ['agt_a', null], ['agt_b', 'tgt_x'], ['agt_b', 'tgt_y']] as const) {
    add(agent, target, 700_000, 'settled', 60_000, 512_345);
    add(agent, target, 300_000, 'settled', 30 * 3_600_000, 300_000); // before the rolling window and the day
    add(agent, target, 90_000, 'requested', 10_000);
    add(agent, target, 80_000, 'approved', 20_000);
    add(agent, target, 70_000, 'approved', 40_000, undefined, -1_000); // expired by time, not yet persisted
    add(agent, target, 60_000, 'claimed', 50_000);
    add(agent, target, 50_000, 'released', 70_000);
    add(agent, target, 40_000, 'denied', 80_000);
  }
}

// The sums as the ledger read them before the migration: amounts spent from the settlements table.
const BY_SETTLEMENTS = {
  spentAndHeld: `
    COALESCE(SUM(CASE WHEN a.status = 'settled' THEN s.amount_units ELSE 0 END), 0) AS spent,
    COALESCE(SUM(CASE WHEN ((a.status IN ('requested', 'approved') AND a.expires_at > @now) OR a.status = 'claimed') THEN a.amount_units ELSE 0 END), 0) AS held`,
  from: 'FROM authorizations a LEFT JOIN settlements s ON s.token_id = a.token_id',
};

function oldSums(db: Database.Database, where: string, parameters: Record<string, unknown>) {
  return db.prepare(`SELECT ${BY_SETTLEMENTS.spentAndHeld} ${BY_SETTLEMENTS.from} WHERE ${where}`).get(parameters) as { spent: bigint; held: bigint };
}

const SCOPES = [
  { name: 'agent', agent_id: 'agt_a', target_id: null },
  { name: 'agent and target', agent_id: 'agt_b', target_id: 'tgt_x' },
  { name: 'installation', agent_id: null, target_id: null },
] as const;

describe('ledger migration 17 (what the caps and budgets count, read from an index alone)', () => {
  it('copies each settled amount onto its authorization, and every window sum is what the settlements gave', () => {
    expect(M17).toBeDefined();
    const path = join(dir, 'ledger.db');
    const old = openDatabase(path, BEFORE);
    history(old);
    const since = { rolling: NOW - 24 * 3_600_000, day: NOW - 12 * 3_600_000, month: NOW - 40 * 3_600_000 };
    const expected = SCOPES.flatMap((scope) =>
      Object.values(since).map((from) => {
        const where = [scope.agent_id === null ? null : 'a.agent_id = @agent_id', scope.target_id === null ? null : 'a.target_id = @target_id', 'a.created_at >= @since'].filter(Boolean).join(' AND ');
        return oldSums(old, where, { agent_id: scope.agent_id, target_id: scope.target_id, since: from, now: NOW });
      }),
    );
    const rolling = oldSums(old, 'a.agent_id = @agent_id AND a.created_at > @since', { agent_id: 'agt_a', since: since.rolling, now: NOW });
    old.close();

    const db = openDatabase(path, LEDGER_MIGRATIONS);
    try {
      expect(all(db, "SELECT token_id, settled_units FROM authorizations WHERE status = 'settled' AND settled_units IS NOT (SELECT amount_units FROM settlements s WHERE s.token_id = authorizations.token_id)")).toEqual([]);
      expect(all(db, "SELECT COUNT(*) AS n FROM authorizations WHERE settled_units IS NOT NULL")).toEqual([{ n: 8n }]);
      expect(all(db, "SELECT COUNT(*) AS n FROM authorizations WHERE status <> 'settled' AND settled_units IS NOT NULL")).toEqual([{ n: 0n }]);

      const budgets = createBudgetStore(db);
      const got = SCOPES.flatMap((scope) => Object.values(since).map((from) => budgets.unitsIn({ agentId: scope.agent_id, targetId: scope.target_id, since: from, now: NOW })));
      expect(got).toEqual(expected);
      // Not a trivial history: some of each kind in the windows.
      expect(expected.every((sums) => sums.spent > 0n && sums.held > 0n)).toBe(true);
      expect(expected[0]).toEqual({ spent: 1_024_690n, held: 460_000n });

      const window = { agent_id: 'agt_a', since: since.rolling, now: NOW };
      expect(db.prepare(WINDOW_SUMS.rollingAgent).get(window)).toEqual(rolling);
      expect(db.prepare(WINDOW_SUMS.rollingCommitted).get(window)).toEqual({ units: rolling.spent + rolling.held });
    } finally {
      db.close();
    }
  });

  it('a settlement written after it sets the amount by itself, and no other value is accepted', () => {
    const db = openDatabase(join(dir, 'ledger.db'), LEDGER_MIGRATIONS);
    try {
      history(db);
      insertAuthorization(db, { token: 'tok_new', agent: 'agt_a', target: null, units: 900_000, status: 'claimed', createdAt: NOW, expiresAt: NOW + 1 });
      expect(all(db, "SELECT settled_units FROM authorizations WHERE token_id = 'tok_new'")).toEqual([{ settled_units: null }]);
      insertSettlement(db, 'tok_new', 123_457, NOW + 10);
      expect(all(db, "SELECT settled_units FROM authorizations WHERE token_id = 'tok_new'")).toEqual([{ settled_units: 123_457n }]);
      expect(() => db.prepare("UPDATE authorizations SET settled_units = 900000 WHERE token_id = 'tok_new'").run()).toThrow("settled_units is the settlement's amount");
      expect(() => db.prepare("UPDATE authorizations SET settled_units = NULL WHERE token_id = 'tok_new'").run()).toThrow("settled_units is the settlement's amount");
      // An authorization without a settlement cannot be given a settled amount.
      expect(() => db.prepare("UPDATE authorizations SET settled_units = 1 WHERE token_id = 'tok_3'").run()).toThrow("settled_units is the settlement's amount");
      // Other columns change as before.
      db.prepare("UPDATE authorizations SET status = 'settled', closed_at = ? WHERE token_id = 'tok_new'").run(NOW + 10);
      expect(all(db, "SELECT status, settled_units FROM authorizations WHERE token_id = 'tok_new'")).toEqual([{ status: 'settled', settled_units: 123_457n }]);
    } finally {
      db.close();
    }
  });

  it('each window sum reads its covering index alone, no settlement rows; the events keep no index no query uses', () => {
    const db = openDatabase(join(dir, 'ledger.db'), LEDGER_MIGRATIONS);
    try {
      const plan = (sql: string) => all(db, `EXPLAIN QUERY PLAN ${sql}`, { agent_id: 'a', target_id: 't', since: 0, now: 0 }).map((row) => row.detail as string);
      expect(plan(WINDOW_SUMS.rollingCommitted)).toEqual(['SEARCH a USING COVERING INDEX authorizations_by_agent (agent_id=? AND created_at>?)']);
      expect(plan(WINDOW_SUMS.rollingAgent)).toEqual(['SEARCH a USING COVERING INDEX authorizations_by_agent (agent_id=? AND created_at>?)']);
      expect(plan(WINDOW_SUMS.periodAgent)).toEqual(['SEARCH a USING COVERING INDEX authorizations_by_agent (agent_id=? AND created_at>?)']);
      expect(plan(WINDOW_SUMS.periodTarget)).toEqual(['SEARCH a USING COVERING INDEX authorizations_by_agent_target (agent_id=? AND target_id=? AND created_at>?)']);
      expect(plan(WINDOW_SUMS.periodInstallation)).toEqual(['SEARCH a USING COVERING INDEX authorizations_by_time (created_at>?)']);
      expect(all(db, "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'events' AND sql IS NOT NULL")).toEqual([]);
    } finally {
      db.close();
    }
  });
});
