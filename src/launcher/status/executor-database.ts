/*
 * Read-only counts from a profile's executor database, for the launcher's reports (`stack stop`,
 * `stack status`, `stack doctor`). better-sqlite3 is loaded only when asked, so `stack status`
 * stays light when there is no database.
 */

/** Executions in any of `states`; null when the database is absent, locked past 0.5 s or of another schema. */
export async function countExecutions(databasePath: string, states: readonly string[]): Promise<number | null> {
  try {
    const { default: Database } = await import('better-sqlite3');
    const db = new Database(databasePath, { readonly: true, fileMustExist: true });
    try {
      db.pragma('busy_timeout = 500');
      const placeholders = states.map(() => '?').join(', ');
      return (db.prepare(`SELECT COUNT(*) AS count FROM executions WHERE state IN (${placeholders})`).get(...states) as { count: number }).count;
    } finally {
      db.close();
    }
  } catch {
    return null;
  }
}

/** Workflow runs the executor started again (docs/executions.md "Rescheduling closed runs"). */
export interface RescheduledRuns {
  readonly total: number;
  /** Of those, started again within the last 24 hours. */
  readonly last_24h: number;
  /** When the last one was, ISO 8601; null when none. */
  readonly last_at: string | null;
}

/**
 * The executor's log of rescheduled workflow runs; null when the database is absent, locked past
 * 0.5 s, or older than the log (an executor not yet started on this version).
 */
export async function countRescheduledRuns(databasePath: string, now = Date.now()): Promise<RescheduledRuns | null> {
  try {
    const { default: Database } = await import('better-sqlite3');
    const db = new Database(databasePath, { readonly: true, fileMustExist: true });
    try {
      db.pragma('busy_timeout = 500');
      const row = db
        .prepare('SELECT COUNT(*) AS total, COALESCE(SUM(rescheduled_at >= ?), 0) AS recent, MAX(rescheduled_at) AS last FROM workflow_reschedules')
        .get(now - 86_400_000) as { total: number; recent: number; last: number | null };
      return { total: row.total, last_24h: row.recent, last_at: row.last === null ? null : new Date(row.last).toISOString() };
    } finally {
      db.close();
    }
  } catch {
    return null;
  }
}
