import type Database from 'better-sqlite3';
import { ROLLING_WINDOW_MS } from '../authorization-rules.js';
import { holdsNow, SPENT_AND_HELD } from './counted-units.js';

/*
 * What `GET /metrics` reports of the ledger's state, read from its database when a scraper asks
 * (ledger-metrics.ts): nothing is counted in memory, so a restart loses nothing and every figure
 * is the sum of the rows it stands for. What would read the whole history — the closed
 * authorizations by status, settled totals — comes from the counts ledger migration 18 keeps in
 * each change's transaction, so a scrape costs the same at a million authorizations as at ten;
 * the rest reads what is open now or the rolling window. Labels are the agent's name (1-64 characters of a fixed
 * alphabet) and the executor target id the authorization was requested for (`none` when it was
 * requested without one); never an authorization id, a purpose or any other free text.
 */

/** One labelled sum in micro-units. */
export interface UnitsByAgentAndTarget {
  readonly agent: string;
  readonly target: string;
  readonly units: bigint;
}

// The rolling window's sums are windowUnits' (ledger-store.ts) for every agent at once; what is held, counted-units.ts's.
export const METRICS_SQL = {
  // The closed statuses from their kept counts; the open ones (few: the expiry sweep closes what nobody claims) from the status index, a requested or approved one past its expiry as expired.
  byStatus: `
    SELECT status, SUM(count) AS count FROM (
      SELECT status, count FROM authorization_counts
      UNION ALL
      SELECT CASE WHEN status IN ('requested', 'approved') AND expires_at <= @now THEN 'expired' ELSE status END, 1
      FROM authorizations WHERE status IN ('requested', 'approved', 'claimed')
    ) GROUP BY status HAVING SUM(count) > 0 ORDER BY status`,
  settled: `
    SELECT g.name AS agent, CASE t.target_key WHEN '' THEN 'none' ELSE t.target_key END AS target, SUM(t.units) AS units
    FROM settled_totals t JOIN agents g ON g.agent_id = t.agent_id
    GROUP BY 1, 2 ORDER BY 1, 2`,
  held: `
    SELECT g.name AS agent, COALESCE(a.target_id, 'none') AS target, SUM(a.amount_units) AS units
    FROM authorizations a JOIN agents g ON g.agent_id = a.agent_id
    WHERE ${holdsNow('a')}
    GROUP BY 1, 2 ORDER BY 1, 2`,
  rolling: `
    SELECT g.name AS agent, p.daily_cap_units AS cap, ${SPENT_AND_HELD}
    FROM agents g JOIN policies p ON p.agent_id = g.agent_id
      LEFT JOIN authorizations a ON a.agent_id = g.agent_id AND a.created_at > @since
    GROUP BY g.agent_id ORDER BY g.name`,
  openReconciliations: "SELECT COUNT(*) FROM reconciliation_records WHERE status = 'open'",
} as const;

export type MetricsReads = ReturnType<typeof createMetricsReads>;

/** Each read is one statement, so one consistent snapshot, and none takes a write lock. */
export function createMetricsReads(db: Database.Database) {
  const statements = {
    byStatus: db.prepare(METRICS_SQL.byStatus),
    settled: db.prepare(METRICS_SQL.settled),
    held: db.prepare(METRICS_SQL.held),
    rolling: db.prepare(METRICS_SQL.rolling),
    openReconciliations: db.prepare(METRICS_SQL.openReconciliations).pluck(),
    agentNames: db.prepare('SELECT agent_id, name FROM agents'),
  };
  return {
    /** Every agent's name by its id (the budgets' gauges are labelled by name). */
    agentNames: () => new Map((statements.agentNames.all() as { agent_id: string; name: string }[]).map((row) => [row.agent_id, row.name])),
    /** Authorizations by status; a requested or approved one past its expiry counts as `expired`, as the ledger answers it. */
    authorizationsByStatus: (now: number) => statements.byStatus.all({ now }) as { status: string; count: bigint }[],
    /** Every settlement's amount, summed by agent and target. */
    settledUnits: () => statements.settled.all() as UnitsByAgentAndTarget[],
    /** Held now: requested or approved and not expired, or claimed (what the rolling cap counts as held). */
    heldUnits: (now: number) => statements.held.all({ now }) as UnitsByAgentAndTarget[],
    /** Per agent: its rolling 24 h cap less what it spent and holds in the window, never below zero (GET /agent/spending's `remaining_units`). */
    rollingRemaining(now: number): { agent: string; remaining: bigint }[] {
      const rows = statements.rolling.all({ now, since: now - ROLLING_WINDOW_MS }) as { agent: string; cap: bigint; spent: bigint; held: bigint }[];
      return rows.map((row) => {
        const left = row.cap - row.spent - row.held;
        return { agent: row.agent, remaining: left > 0n ? left : 0n };
      });
    },
    openReconciliations: () => statements.openReconciliations.get() as bigint,
  };
}
