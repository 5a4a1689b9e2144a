import type Database from 'better-sqlite3';

/* The ledger's SQL for an executor's own claims (executor-claims.ts): reads only. */

export interface ClaimRow {
  token_id: string;
  execution_id: string;
  claimed_at: bigint;
}

export type ClaimsStore = ReturnType<typeof createClaimsStore>;

export function createClaimsStore(db: Database.Database) {
  // Keyset-paged by token id over the partial index (claimed_by, token_id) WHERE status = 'claimed':
  // a page never repeats or skips a claim while others are released between pages. The claims of
  // every credential of the caller's line (ledger migration 7) are its own: an executor whose
  // credential was rotated still finds the claims it made with the one before.
  const page = db.prepare(
    `SELECT token_id, execution_id, claimed_at FROM authorizations
     WHERE status = 'claimed' AND token_id > @after AND claimed_at <= @before
       AND claimed_by IN (SELECT credential_id FROM credentials WHERE lineage = (SELECT lineage FROM credentials WHERE credential_id = @credential))
     ORDER BY token_id LIMIT @limit`,
  );
  const unattributed = db.prepare("SELECT COUNT(*) AS count FROM authorizations WHERE status = 'claimed' AND claimed_by IS NULL");

  return {
    /** Up to `limit` claims still `claimed` by `credential` or another credential of its line, claimed at `before` or earlier, in token id order after `after` (exclusive). */
    claimedBy: (query: { credential: string; after: string; before: number; limit: number }) => page.all(query) as ClaimRow[],
    /** How many claims are still `claimed` with no recorded claimant. */
    unattributedCount: () => (unattributed.get() as { count: bigint }).count,
  };
}
