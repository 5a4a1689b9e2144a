import { join } from 'node:path';
import type Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { EXECUTIONS_BY_STATE_SQL } from '../../src/executor/executor-metrics.js';
import { EXECUTOR_MIGRATIONS } from '../../src/executor/store/migrations/executor-migrations.js';
import { createMetricsReads, METRICS_SQL } from '../../src/ledger/store/metrics-reads.js';
import { LEDGER_MIGRATIONS } from '../../src/ledger/store/migrations.js';
import { DELIVERY_COUNTS_SQL } from '../../src/ledger/store/webhook-rows.js';
import { createWebhookStore, type WebhookStore } from '../../src/ledger/store/webhook-store.js';
import { openDatabase } from '../../src/storage/open-database.js';
import { makeTempDir, removeDir } from '../support/cli.js';

/*
 * Ledger migration 18 and executor migration 14 (what the metrics count, kept as the rows change):
 * a scrape reads counts that triggers keep in each change's transaction — authorizations by
 * status, settled totals by agent and target, webhook deliveries by sink and status, executions
 * by state — instead of the whole history. Each figure must be what the old whole-history
 * statement gave (kept here as the reference), after the migration fills the counts in from an
 * existing history and after any sequence of changes; a rolled-back change leaves them as they
 * were; and the scrape's statements read neither the authorizations' nor the settlements' rows
 * (beyond the few still open). Found by name: their numbers may change when branches merge.
 */

const LEDGER_NAME = 'what the metrics count, kept as the rows change';
const M18 = LEDGER_MIGRATIONS.find((migration) => migration.name === LEDGER_NAME);
const LEDGER_BEFORE = LEDGER_MIGRATIONS.filter((migration) => migration.version < (M18?.version ?? 0));
const M14 = EXECUTOR_MIGRATIONS.find((migration) => migration.name === 'execution_counts');
const EXECUTOR_BEFORE = EXECUTOR_MIGRATIONS.filter((migration) => migration.version < (M14?.version ?? 0));

const NOW = 1_800_000_000_000;
const STATUSES = ['requested', 'approved', 'denied', 'claimed', 'settled', 'released', 'expired', 'cancelled'] as const;
const AGENTS = ['agt_a', 'agt_b', 'agt_c'] as const;
const TARGETS = ['tgt_x', 'tgt_y', null] as const;
const SINKS = ['whk_1', 'whk_2'] as const;

// The scrape's statements as they were before the counts were kept: read the whole history.
const OLD = {
  byStatus: `
    SELECT CASE WHEN status IN ('requested', 'approved') AND expires_at <= @now THEN 'expired' ELSE status END AS status, COUNT(*) AS count
    FROM authorizations GROUP BY 1 ORDER BY 1`,
  settled: `
    SELECT g.name AS agent, COALESCE(a.target_id, 'none') AS target, SUM(s.amount_units) AS units
    FROM settlements s JOIN authorizations a ON a.token_id = s.token_id JOIN agents g ON g.agent_id = a.agent_id
    GROUP BY 1, 2 ORDER BY 1, 2`,
  deliveries: `
    SELECT s.sink_id AS sink_id,
      COALESCE(SUM(d.status = 'delivered'), 0) AS delivered,
      COALESCE(SUM(d.status = 'failed'), 0) AS failed,
      COALESCE(SUM(d.status = 'pending'), 0) AS pending
    FROM webhook_sinks s LEFT JOIN webhook_deliveries d ON d.sink_id = s.sink_id
    GROUP BY s.sink_id ORDER BY s.created_at, s.sink_id`,
  executions: 'SELECT state, COUNT(*) AS count FROM executions GROUP BY state ORDER BY state',
};

let dir: string;

beforeEach(async () => {
  dir = await makeTempDir('lexec-kept-counts-');
});

afterEach(async () => {
  await removeDir(dir);
});

/** A small deterministic generator (mulberry32): the same seed, the same history. */
function generator(seed: number) {
  let state = seed >>> 0;
  const next = () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
  const pick = <T>(items: readonly T[]): T => items[Math.floor(next() * items.length)] as T;
  return { next, pick, int: (below: number) => Math.floor(next() * below) };
}

/**
 * Writes a ledger's history with `steps` random changes: new authorizations, status changes,
 * settlements, events and their deliveries. The deliveries go through the webhook store (take-up
 * and outcomes in its transactions, as the delivery worker makes them, a sink removed on the way)
 * — or, for a ledger from before the kept counts (`store` null), straight into the table.
 */
function ledgerHistory(db: Database.Database, seed: number, steps: number, first = 0, store: WebhookStore | null = null) {
  const random = generator(seed);
  if (first === 0) {
    db.prepare("INSERT INTO owner (account_id, created_at) VALUES ('acct_1', 0)").run();
    for (const agent of AGENTS) db.prepare("INSERT INTO agents (agent_id, name, status, created_at) VALUES (?, ?, 'active', 1)").run(agent, agent.slice(4));
    for (const sink of SINKS) {
      db.prepare("INSERT INTO webhook_sinks (sink_id, url, format, event_types, secret_path, created_at, removed_at, cursor_event_id) VALUES (?, 'http://127.0.0.1:9/', 'lexec', NULL, '/s', 1, NULL, 0)").run(sink);
    }
  }
  const insert = db.prepare(
    `INSERT INTO authorizations (token_id, account_id, agent_id, amount_units, units_scale, currency, amount_cents, status, execution_id, created_at, expires_at, target_id, cancellation_reason)
     VALUES (@token, 'acct_1', @agent, @units, 6, 'USD', @cents, @status, @execution, @at, @expires, @target, @cancellation)`,
  );
  const settle = db.prepare(
    `INSERT INTO settlements (settlement_id, token_id, receipt_id, execution_id, receipt_shape, amount_units, units_scale, currency, amount_cents, price_model_snapshot, receipt_fingerprint, created_at)
     VALUES ('stl_' || @token, @token, 'rcpt_' || @token, 'exe_' || @token, 'precise', @units, 6, 'USD', @cents, '{}', 'fp', @at)`,
  );
  const event = db.prepare("INSERT INTO events (at, type, agent_id, token_id, details) VALUES (?, 'authorization_requested', ?, ?, '{}')");
  const deliver = db.prepare("INSERT INTO webhook_deliveries (sink_id, event_id, status, attempts, created_at, next_attempt_at) VALUES (?, ?, 'pending', 0, 1, 1)");
  const pendingNow = db.prepare("SELECT delivery_id AS deliveryId, sink_id AS sinkId FROM webhook_deliveries WHERE status = 'pending' ORDER BY delivery_id");
  const open: { token: string; status: string }[] = [];
  const pending: bigint[] = [];
  for (let step = first; step < first + steps; step += 1) {
    const roll = random.next();
    if (roll < 0.5 || open.length === 0) {
      const token = `tok_${step}`;
      // Some begin closed (the history before the migration has every status); most begin requested.
      const status = random.next() < 0.3 ? random.pick(STATUSES) : 'requested';
      const execution = ['claimed', 'settled', 'released'].includes(status) ? `exe_${token}` : null;
      const units = 1 + random.int(900_000);
      const expires = NOW + (random.next() < 0.2 ? -1_000 : 3_600_000);
      insert.run({ token, agent: random.pick(AGENTS), units, cents: Math.ceil(units / 10_000), status, execution, at: NOW - random.int(1e9), expires, target: random.pick(TARGETS), cancellation: status === 'cancelled' ? 'agent' : null });
      if (status === 'settled') settle.run({ token, units: 1 + random.int(units), cents: Math.ceil(units / 10_000), at: NOW });
      if (status === 'requested' || status === 'approved' || status === 'claimed') open.push({ token, status });
      const eventId = event.run(NOW, 'agt_a', token).lastInsertRowid as number;
      if (store === null) for (const sink of SINKS) if (random.next() < 0.8) pending.push(deliver.run(sink, eventId).lastInsertRowid as unknown as bigint);
    } else if (roll < 0.75) {
      const index = random.int(open.length);
      const authorization = open[index] as { token: string; status: string };
      const next =
        authorization.status === 'requested' ? random.pick(['approved', 'denied', 'expired', 'cancelled'] as const) : authorization.status === 'approved' ? random.pick(['claimed', 'expired'] as const) : random.pick(['settled', 'released'] as const);
      db.prepare('UPDATE authorizations SET status = @next, execution_id = CASE WHEN @next IN (\'claimed\', \'settled\', \'released\') THEN \'exe_\' || token_id ELSE execution_id END, cancellation_reason = CASE WHEN @next = \'cancelled\' THEN \'agent\' END WHERE token_id = @token').run({ next, token: authorization.token });
      if (next === 'settled') {
        const units = Number(db.prepare('SELECT amount_units FROM authorizations WHERE token_id = ?').pluck().get(authorization.token)) - random.int(1_000);
        settle.run({ token: authorization.token, units: Math.max(units, 1), cents: Math.ceil(Math.max(units, 1) / 10_000), at: NOW });
      }
      if (next === 'approved' || next === 'claimed') authorization.status = next;
      else open.splice(index, 1);
    } else if (store !== null) {
      // A turn of the delivery worker: some outcomes (delivered, retried later, failed for good) and the take-up, one transaction.
      const due = pendingNow.all() as { deliveryId: bigint; sinkId: string }[];
      store.transaction(() => {
        for (const delivery of due) {
          const roll = random.next();
          if (roll < 0.5) store.delivered(delivery, 200);
          else if (roll < 0.6) store.retry(delivery, { httpStatus: 503, error: 'http_status' }, NOW + 1_000);
          else if (roll < 0.7) store.retry(delivery, { httpStatus: null, error: 'timeout' }, null);
        }
        store.takeUp();
      });
    } else if (pending.length > 0) {
      const delivery = pending.splice(random.int(pending.length), 1)[0];
      const outcome = random.next() < 0.8 ? 'delivered' : 'failed';
      db.prepare(
        outcome === 'delivered'
          ? "UPDATE webhook_deliveries SET status = 'delivered', delivered_at = 2, next_attempt_at = NULL, attempts = attempts + 1 WHERE delivery_id = ?"
          : "UPDATE webhook_deliveries SET status = 'failed', next_attempt_at = NULL, attempts = attempts + 1 WHERE delivery_id = ?",
      ).run(delivery);
    }
  }
  // An operator removes the second sink later in the history: its pending deliveries fail.
  if (store !== null && first > 0) store.remove(SINKS[1], { credential_id: 'cred_operator', kind: 'admin' });
}

/** What the whole-history statements read (the reference). */
function reference(db: Database.Database) {
  return {
    byStatus: db.prepare(OLD.byStatus).all({ now: NOW }),
    settled: db.prepare(OLD.settled).all(),
    deliveries: (db.prepare(OLD.deliveries).all() as { sink_id: string; delivered: bigint; failed: bigint; pending: bigint }[]).map((row) => ({
      sink_id: row.sink_id,
      delivered: Number(row.delivered),
      failed: Number(row.failed),
      pending: Number(row.pending),
    })),
  };
}

/** What a scrape reports, read as the metrics read it now, and the reference beside it. */
function figures(db: Database.Database) {
  const reads = createMetricsReads(db);
  return {
    now: { byStatus: reads.authorizationsByStatus(NOW), settled: reads.settledUnits(), deliveries: createWebhookStore(db, () => NOW).counts() },
    old: reference(db),
  };
}

describe('ledger migration 18 (what the metrics count, kept as the rows change)', () => {
  it('fills the counts in from an existing history: every figure a scrape reports is what the whole history gave', () => {
    expect(M18).toBeDefined();
    const path = join(dir, 'ledger.db');
    const old = openDatabase(path, LEDGER_BEFORE);
    ledgerHistory(old, 1, 600);
    const before = reference(old);
    old.close();

    const db = openDatabase(path, LEDGER_MIGRATIONS);
    try {
      const { now, old: reference } = figures(db);
      expect(reference).toEqual(before);
      expect(now).toEqual(before);
      // Not a trivial history: every status (expired ones by time too), settlements with and without a target, deliveries of every outcome.
      expect(before.byStatus.map((row) => (row as { status: string }).status)).toEqual([...STATUSES].sort());
      expect(before.settled.some((row) => (row as { target: string }).target === 'none')).toBe(true);
      expect(before.deliveries.every((row) => row.delivered > 0 && row.failed > 0 && row.pending > 0)).toBe(true);
    } finally {
      db.close();
    }
  });

  it('keeps every count through any sequence of changes (four seeds), and a rolled-back change leaves them as they were', () => {
    for (const seed of [2, 3, 4, 5]) {
      const db = openDatabase(join(dir, `ledger-${seed}.db`), LEDGER_MIGRATIONS);
      try {
        const store = createWebhookStore(db, () => NOW);
        ledgerHistory(db, seed, 150, 0, store);
        const { now, old } = figures(db);
        expect(now).toEqual(old);
        ledgerHistory(db, seed + 100, 450, 150, store);
        const later = figures(db);
        expect(later.now).toEqual(later.old);
        expect(later.now).not.toEqual(now);
        // Through the store: deliveries taken up, delivered, retried and failed for both sinks, the second's pending ones failed by its removal.
        expect(later.old.deliveries.every((row) => row.delivered > 0 && row.failed > 0)).toBe(true);
        expect(later.old.deliveries.map((row) => row.pending > 0)).toEqual([true, false]);
        // Out of a closed status (nothing in the ledger does it), and a row deleted: the counts follow all the same.
        expect(db.prepare("UPDATE authorizations SET status = 'requested' WHERE token_id = (SELECT MIN(token_id) FROM authorizations WHERE status = 'expired')").run().changes).toBe(1);
        expect(db.prepare("DELETE FROM authorizations WHERE token_id = (SELECT MIN(token_id) FROM authorizations WHERE status = 'denied')").run().changes).toBe(1);
        const moved = figures(db);
        expect(moved.now).toEqual(moved.old);
        expect(moved.now.byStatus).not.toEqual(later.now.byStatus);

        const kept = () => db.prepare('SELECT (SELECT json_group_array(json_array(status, count)) FROM authorization_counts) AS a, (SELECT json_group_array(json_array(agent_id, target_key, units)) FROM settled_totals) AS s, (SELECT json_group_array(json_array(sink_id, status, count)) FROM webhook_delivery_counts) AS d').get();
        const atRest = kept();
        expect(() =>
          db.transaction(() => {
            ledgerHistory(db, seed + 200, 50, 600, store);
            throw new Error('crashed mid-change');
          })(),
        ).toThrow('crashed mid-change');
        expect(kept()).toEqual(atRest);
      } finally {
        db.close();
      }
    }
  });

  it('a scrape reads the kept counts and the open authorizations only, never the whole history', () => {
    const db = openDatabase(join(dir, 'ledger.db'), LEDGER_MIGRATIONS);
    try {
      const plan = (sql: string) => (db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all({ now: NOW }) as { detail: string }[]).map((row) => row.detail);
      const details = [...plan(METRICS_SQL.byStatus), ...plan(METRICS_SQL.settled), ...plan(DELIVERY_COUNTS_SQL)];
      // The authorizations are searched by status for the open ones only; nothing reads the settlements or the deliveries.
      expect(details).toContain('SEARCH authorizations USING INDEX authorizations_by_status (status=?)');
      expect(details.filter((detail) => /authorizations|settlements|webhook_deliveries\b/.test(detail))).toEqual(['SEARCH authorizations USING INDEX authorizations_by_status (status=?)']);
    } finally {
      db.close();
    }
  });
});

describe('executor migration 14 (the executions by state, kept as they change)', () => {
  function executions(db: Database.Database, seed: number, count: number, first = 0) {
    const random = generator(seed);
    const insert = db.prepare(
      `INSERT INTO executions (execution_id, workflow_id, spend_auth_token_id, account_id, agent_id, target_id, request_json, pricing_snapshot,
         authorization_held_cents, authorization_held_units, currency, state, created_at, updated_at)
       VALUES (?, ?, ?, 'acct_1', 'agt_1', 'lexec:target:v1:flux', '{}', '{}', 1, 3000, 'USD', ?, 1, 1)`,
    );
    const move = db.prepare('UPDATE executions SET state = ?, updated_at = 2 WHERE execution_id = ?');
    for (let n = first; n < first + count; n += 1) {
      insert.run(`exe_${n}`, `wf_${n}`, `tok_${n}`, random.pick(['pending', 'scheduled', 'running'] as const));
      if (random.next() < 0.7) move.run('running', `exe_${n}`);
      if (random.next() < 0.8) move.run(random.pick(['succeeded', 'failed', 'reconciliation'] as const), `exe_${n}`);
    }
  }
  // As the metrics read them.
  const kept = (db: Database.Database) => db.prepare(EXECUTIONS_BY_STATE_SQL).all();

  it('fills the counts in from the executions, keeps them through every change, and the metrics read them', () => {
    expect(M14).toBeDefined();
    const path = join(dir, 'executor.db');
    const old = openDatabase(path, EXECUTOR_BEFORE);
    executions(old, 7, 300);
    const before = old.prepare(OLD.executions).all();
    old.close();

    const db = openDatabase(path, EXECUTOR_MIGRATIONS);
    try {
      expect(kept(db)).toEqual(before);
      expect((before as { state: string }[]).map((row) => row.state)).toEqual(['failed', 'pending', 'reconciliation', 'running', 'scheduled', 'succeeded']);
      executions(db, 8, 300, 300);
      db.prepare("UPDATE executions SET state = 'succeeded' WHERE state = 'running'").run();
      expect(kept(db)).toEqual(db.prepare(OLD.executions).all());
      expect(kept(db)).not.toEqual(before);
      // Only the running states are read from the executions, by their index.
      const plan = (db.prepare(`EXPLAIN QUERY PLAN ${EXECUTIONS_BY_STATE_SQL}`).all() as { detail: string }[]).map((row) => row.detail).filter((detail) => /executions\b/.test(detail));
      expect(plan).toEqual([expect.stringMatching(/^SEARCH executions USING (COVERING )?INDEX executions_by_state \(state=\?\)$/)]);
    } finally {
      db.close();
    }
  });
});
