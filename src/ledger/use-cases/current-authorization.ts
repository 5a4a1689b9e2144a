import type { CrashPoint, CrashPoints } from '../../crash-points.js';
import type { EventStore } from '../store/event-store.js';
import type { LedgerStore } from '../store/ledger-store.js';
import type { AuthorizationRow } from '../store/ledger-rows.js';
import { effectiveStatus } from '../authorization-rules.js';
import { conflict, notFound } from '../ledger-error.js';

/** What every use case works with: the ledger's store, its events outbox and its clock (ms since the epoch). */
export interface LedgerContext {
  readonly store: LedgerStore;
  /** Append an event in the transaction of the change it records (store/event-store.ts). */
  readonly events: EventStore;
  readonly now: () => number;
}

/** What a use case that answers the executor needs besides: its crash point fires after the commit. */
export interface CommitContext extends LedgerContext {
  /** Development builds' crash points after a commit (src/crash-points.ts). */
  readonly crash: CrashPoints;
}

/** Runs `fn` in one IMMEDIATE transaction and, once it has committed, reaches the crash point that follows the commit. */
export function commitThenReach<T>(context: CommitContext, point: CrashPoint, fn: () => T): T {
  const committed = context.store.immediate(fn);
  context.crash.reach(point);
  return committed;
}

/** The authorization as stored; an unknown token is `not_found`. */
export function loadAuthorization(store: LedgerStore, tokenId: string): AuthorizationRow {
  const row = store.authorization(tokenId);
  if (!row) throw notFound();
  return row;
}

/** Persists an expiry that the clock has reached, so every reader agrees on the status. */
export function currentAuthorization({ store, now }: LedgerContext, tokenId: string): AuthorizationRow {
  const row = loadAuthorization(store, tokenId);
  const status = effectiveStatus(row.status, Number(row.expires_at), now());
  if (status === row.status) return row;
  store.expire(tokenId, now());
  return loadAuthorization(store, tokenId);
}

/** Persists every expiry the clock has reached, so listings can filter by status in SQL. */
export function expireAuthorizations({ store, now }: LedgerContext): void {
  store.sweepExpired(now());
}

/** Settling, releasing or parking needs the authorization claimed by this very execution. */
export function requireClaimedBy(row: AuthorizationRow, executionId: string): void {
  if (row.status === 'claimed' && row.execution_id === executionId) return;
  if (row.execution_id !== null && row.execution_id !== executionId) throw conflict('claimed_by_another_execution');
  throw conflict(`authorization_${row.status}`);
}
