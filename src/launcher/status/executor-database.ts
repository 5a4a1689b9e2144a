import type Database from 'better-sqlite3';
import { IN_FLIGHT_STATES } from '../../executor/domain/execution-states.js';

/*
 * Read-only counts from a profile's executor database, for the launcher's reports (`stack stop`,
 * `stack status`, `stack doctor`). better-sqlite3 is loaded only when asked, so `stack status`
 * stays light when there is no database.
 */

/** Workflow runs the executor started again (docs/executions.md "Rescheduling closed runs"). */
export interface RescheduledRuns {
  readonly total: number;
  /** Of those, started again within the last 24 hours. */
  readonly last_24h: number;
  /** When the last one was, ISO 8601; null when none. */
  readonly last_at: string | null;
}

/** Runs `read` on the database opened read-only; null when it is absent, locked past 0.5 s or of another schema. */
export async function readOnly<T>(databasePath: string, read: (db: Database.Database) => T): Promise<T | null> {
  try {
    const { default: SqliteDatabase } = await import('better-sqlite3');
    const db = new SqliteDatabase(databasePath, { readonly: true, fileMustExist: true });
    try {
      db.pragma('busy_timeout = 500');
      return read(db);
    } finally {
      db.close();
    }
  } catch {
    return null;
  }
}

function executionsIn(db: Database.Database, states: readonly string[]): number {
  const placeholders = states.map(() => '?').join(', ');
  return (db.prepare(`SELECT COUNT(*) AS count FROM executions WHERE state IN (${placeholders})`).get(...states) as { count: number }).count;
}

/** The log of rescheduled runs; throws on a database older than it (migration 7). */
function rescheduledRuns(db: Database.Database, now: number): RescheduledRuns {
  const row = db
    .prepare('SELECT COUNT(*) AS total, COALESCE(SUM(rescheduled_at >= ?), 0) AS recent, MAX(rescheduled_at) AS last FROM workflow_reschedules')
    .get(now - 86_400_000) as { total: number; recent: number; last: number | null };
  return { total: row.total, last_24h: row.recent, last_at: row.last === null ? null : new Date(row.last).toISOString() };
}

/** Executions in any of `states`; null when the database is absent, locked past 0.5 s or of another schema. */
export function countExecutions(databasePath: string, states: readonly string[]): Promise<number | null> {
  return readOnly(databasePath, (db) => executionsIn(db, states));
}

/** The rescheduled-run log; null when the database is absent, locked, or older than the log (an executor not yet started on this version). */
export function countRescheduledRuns(databasePath: string, now = Date.now()): Promise<RescheduledRuns | null> {
  return readOnly(databasePath, (db) => rescheduledRuns(db, now));
}

export interface ExecutorCounts {
  readonly awaiting_human: number | null;
  readonly executions_in_flight: number | null;
  readonly rescheduled_runs: RescheduledRuns | null;
}

/** What `stack status` shows of the executor database, from one read-only open. */
export async function executorCounts(databasePath: string, now = Date.now()): Promise<ExecutorCounts> {
  return (
    (await readOnly(databasePath, (db) => {
      let runs: RescheduledRuns | null = null;
      try {
        runs = rescheduledRuns(db, now);
      } catch {
        // An executor database from before migration 7: no log yet.
      }
      return { awaiting_human: executionsIn(db, ['reconciliation']), executions_in_flight: executionsIn(db, IN_FLIGHT_STATES), rescheduled_runs: runs };
    })) ?? { awaiting_human: null, executions_in_flight: null, rescheduled_runs: null }
  );
}
