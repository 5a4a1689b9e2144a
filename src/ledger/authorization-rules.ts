import type { BudgetPolicy } from './budget-rules.js';

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

/**
 * The runaway-loop breaker's part of a policy (docs/ledger.md "Velocity limits"): optional, null
 * or absent when not set. Counts, not money; whole numbers from 1.
 */
export interface VelocityPolicy {
  readonly max_requests_per_minute?: bigint | null | undefined;
  readonly max_requests_per_hour?: bigint | null | undefined;
  /** The Nth velocity refusal within the rolling hour suspends the agent (needs one of the limits). */
  readonly suspend_after_velocity_refusals?: bigint | null | undefined;
}

/** An agent's spend policy: its caps, velocity limits and calendar budgets (budget-rules.ts). */
export interface SpendPolicy extends VelocityPolicy, BudgetPolicy {
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

export const MINUTE_MS = 60 * 1000;
export const HOUR_MS = 60 * MINUTE_MS;

/** The velocity limits a policy sets, each with its window; empty when it sets none (then nothing is counted). */
export function velocityLimits(policy: VelocityPolicy): VelocityLimit[] {
  const limits: VelocityLimit[] = [];
  if (policy.max_requests_per_minute != null) limits.push({ field: 'max_requests_per_minute', limit: policy.max_requests_per_minute, windowMs: MINUTE_MS });
  if (policy.max_requests_per_hour != null) limits.push({ field: 'max_requests_per_hour', limit: policy.max_requests_per_hour, windowMs: HOUR_MS });
  return limits;
}

export interface VelocityLimit {
  readonly field: 'max_requests_per_minute' | 'max_requests_per_hour';
  readonly limit: bigint;
  readonly windowMs: number;
}

/**
 * What the store read for one limit: the times of the agent's earlier requests ranked `limit`
 * and `limit - 1` by recency (1 = the latest), or null when it has made fewer (`limit - 1` is
 * null when the limit is 1: then the request itself is the one that has to leave the window).
 */
export interface VelocityReading extends VelocityLimit {
  readonly rankLimit: number | null;
  readonly rankBeforeLimit: number | null;
}

export type VelocityDecision =
  | { readonly outcome: 'within' }
  | { readonly outcome: 'refused'; readonly field: VelocityLimit['field']; readonly retryAfterSeconds: number };

/**
 * Decides a request against the agent's velocity limits. Every request the ledger decides for
 * the agent counts, refused ones included, so a request is over a limit when `limit` earlier
 * ones already fall inside its window (now − window, now]. When refused, `retryAfterSeconds` is
 * how long the agent must send nothing for its next request to be within every limit again: the
 * refused request counts too, so per limit the request then ranked `limit` by recency must have
 * left its window. The limit with the longest wait is named.
 */
export function decideVelocity(readings: readonly VelocityReading[], now: number): VelocityDecision {
  const over = readings.some((reading) => reading.rankLimit !== null && reading.rankLimit > now - reading.windowMs);
  if (!over) return { outcome: 'within' };
  let longest = { field: readings[0]?.field ?? ('max_requests_per_minute' as const), waitMs: 0 };
  for (const reading of readings) {
    // With this refused request counted, the one ranked `limit` is the earlier one ranked `limit - 1` (or this one).
    const ranked = reading.limit === 1n ? now : reading.rankBeforeLimit;
    const waitMs = ranked === null ? 0 : ranked + reading.windowMs - now;
    if (waitMs > longest.waitMs) longest = { field: reading.field, waitMs };
  }
  return { outcome: 'refused', field: longest.field, retryAfterSeconds: Math.max(1, Math.ceil(longest.waitMs / 1000)) };
}

/** Whether this velocity refusal, counted with the agent's others in the rolling hour, trips the breaker. */
export function tripsBreaker(policy: VelocityPolicy, refusalsInHour: number): boolean {
  const after = policy.suspend_after_velocity_refusals;
  return after != null && BigInt(refusalsInHour) >= after;
}

/** The suspension reason the breaker records: why, in the operator's terms. */
export function breakerReason(policy: VelocityPolicy, refusals: number): string {
  const limits = [
    policy.max_requests_per_minute == null ? null : `${policy.max_requests_per_minute.toString()} requests per minute`,
    policy.max_requests_per_hour == null ? null : `${policy.max_requests_per_hour.toString()} requests per hour`,
  ].filter((limit) => limit !== null);
  return `velocity: ${refusals} refusals in the last hour (limit ${limits.join(', ')}); suspended automatically by the runaway-loop breaker`;
}
