import { readOnly } from './executor-database.js';

/*
 * Read-only counts from a profile's ledger database, for `stack status` and `stack stop`: what
 * waits for a human there. Opened read-only, like the executor's (executor-database.ts).
 */

/** Authorizations requested and waiting for an approver's decision (not yet expired); null when the database cannot be read. */
export function countPendingApprovals(databasePath: string, now = Date.now()): Promise<number | null> {
  return readOnly(databasePath, (db) => (db.prepare("SELECT COUNT(*) AS count FROM authorizations WHERE status = 'requested' AND expires_at > ?").get(now) as { count: number }).count);
}
