export { centsCeil, unitsFromCents } from '../domain/money.js';

/*
 * Pure rules of the authorization lifecycle (docs/ledger.md):
 *   requested → approved (by policy or an approver) | denied
 *   approved → claimed (by exactly one execution) | expired
 *   claimed → settled | released
 *   requested | approved → cancelled (the agent was suspended before anyone claimed it)
 * No I/O here: the use cases (src/ledger/use-cases/) call these inside the store's transactions.
 */

export const AUTHORIZATION_STATUSES = ['requested', 'approved', 'denied', 'claimed', 'settled', 'released', 'expired', 'cancelled'] as const;
export type AuthorizationStatus = (typeof AUTHORIZATION_STATUSES)[number];

export interface SpendPolicy {
  readonly per_authorization_cap_units: bigint;
  readonly daily_cap_units: bigint;
  readonly approval_threshold_units: bigint;
}

export type PolicyDecision =
  | { readonly outcome: 'approved' }
  | { readonly outcome: 'requested' }
  | { readonly outcome: 'refused'; readonly reason: 'per_authorization_cap_exceeded' | 'daily_cap_exceeded' };

/**
 * Decides a new authorization request: refused above the per-authorization cap or when the
 * agent's rolling 24-hour spend plus holds would pass the daily cap; otherwise approved
 * automatically up to the approval threshold, or left for a human above it. The caller passes
 * `committedUnits` read in the same transaction that inserts the request.
 */
export function decideRequest(policy: SpendPolicy, amountUnits: bigint, committedUnits: bigint): PolicyDecision {
  if (amountUnits > policy.per_authorization_cap_units) return { outcome: 'refused', reason: 'per_authorization_cap_exceeded' };
  if (committedUnits + amountUnits > policy.daily_cap_units) return { outcome: 'refused', reason: 'daily_cap_exceeded' };
  return amountUnits <= policy.approval_threshold_units ? { outcome: 'approved' } : { outcome: 'requested' };
}

/** An unclaimed authorization whose expiry has passed is expired, whatever its stored status says. */
export function effectiveStatus(status: AuthorizationStatus, expiresAt: number, now: number): AuthorizationStatus {
  return (status === 'requested' || status === 'approved') && now >= expiresAt ? 'expired' : status;
}

/** Statuses whose amount still counts against the daily cap (denied, released, expired and cancelled ones hold nothing). */
export function countsAgainstCap(status: AuthorizationStatus): boolean {
  return status === 'requested' || status === 'approved' || status === 'claimed' || status === 'settled';
}

export const ROLLING_WINDOW_MS = 24 * 60 * 60 * 1000;
