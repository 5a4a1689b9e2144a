import type Database from 'better-sqlite3';
import type { LedgerClaim } from './wire/answers.js';
import { createClaimsStore } from './store/claims-store.js';

/*
 * An executor's own claims, as the ledger recorded them (migration 4: `claimed_by`). The executor
 * compares them with its own executions and releases, as `claim_without_execution`, a claim it
 * never turned into an execution (docs/ledger.md "Orphan claims"). Read-only: one SELECT is a
 * consistent snapshot, and the release itself checks the claim again in its own transaction.
 */

export interface ClaimsPage {
  readonly claims: LedgerClaim[];
  /** The `after` of the next page; null when this page is the last. */
  readonly next_after: string | null;
}

export type ExecutorClaims = ReturnType<typeof createExecutorClaims>;

export function createExecutorClaims({ db, now }: { db: Database.Database; now: () => number }) {
  const store = createClaimsStore(db);

  return {
    /**
     * Up to `limit` claims still `claimed` by `credentialId` and claimed at least `olderThanMs`
     * ago, in token id order after `after` (exclusive; null: from the first).
     */
    claimedBy(credentialId: string, query: { olderThanMs: number; limit: number; after: string | null }): ClaimsPage {
      const rows = store.claimedBy({ credential: credentialId, after: query.after ?? '', before: now() - query.olderThanMs, limit: query.limit + 1 });
      const shown = rows.slice(0, query.limit);
      return {
        claims: shown.map((row) => ({ token_id: row.token_id, execution_id: row.execution_id, claimed_at: new Date(Number(row.claimed_at)).toISOString() })),
        next_after: rows.length > query.limit ? (shown.at(-1)?.token_id ?? null) : null,
      };
    },

    /** Claims with no recorded claimant (made before migration 4 with several executor credentials): a human's to settle or release. */
    unattributedCount: () => Number(store.unattributedCount()),
  };
}
