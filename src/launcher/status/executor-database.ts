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
