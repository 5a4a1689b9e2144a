import { breakerReason, decideVelocity, tripsBreaker, velocityLimits, type SpendPolicy } from '../authorization-rules.js';
import { forbidden, tooManyRequests, type LedgerError } from '../ledger-error.js';
import { LEDGER_ACTOR, type AuditStore } from '../store/audit-store.js';
import { AGENT_SUSPENDED, type SuspensionStore } from '../store/suspension-store.js';
import type { VelocityStore } from '../store/velocity-store.js';
import { expireAuthorizations, type LedgerContext } from './current-authorization.js';
import { auditSuspension, suspensionEvents } from './suspend-agent.js';

/*
 * The runaway-loop breaker (docs/ledger.md "Velocity limits"). Called inside a spend request's
 * IMMEDIATE transaction, before its caps are checked: an agent whose policy sets a velocity limit
 * has the request counted (refused or not), and over a limit it is refused with 429
 * `velocity_exceeded` and how long to wait. The Nth velocity refusal in the rolling hour suspends
 * the agent as an operator's suspension does — in the same transaction, its unclaimed
 * authorizations cancelled, holds freed — recorded as the breaker's (`suspended_by`
 * `velocity_breaker`) with why, and in the audit trail as the ledger's own act. The refusal is
 * returned, not thrown: the count and the suspension must commit with it.
 */

export interface VelocityContext extends LedgerContext {
  readonly suspensions: SuspensionStore;
  readonly velocity: VelocityStore;
  readonly audit: AuditStore;
}

/** Counts and decides this request against the agent's velocity limits; the refusal to answer with after the commit, or null. */
export function checkVelocity(context: VelocityContext, agentId: string, policy: SpendPolicy, at: number): LedgerError | null {
  const limits = velocityLimits(policy);
  // No limit set: nothing is counted, exactly as before the breaker existed.
  if (limits.length === 0) return null;
  const decision = decideVelocity(context.velocity.read(agentId, limits), at);
  context.velocity.record(agentId, at, decision.outcome === 'refused');
  if (decision.outcome === 'within') return null;
  const refusals = context.velocity.refusalsInHour(agentId, at);
  if (!tripsBreaker(policy, refusals)) return tooManyRequests('velocity_exceeded', decision.retryAfterSeconds, { velocity_limit: decision.field });
  // As an operator's suspension (use-cases/suspend-agent.ts): expiries first, then the switch and its cancellations.
  expireAuthorizations(context);
  const reason = breakerReason(policy, refusals);
  context.suspensions.suspend(agentId, reason, at, 'velocity_breaker');
  const cancelled = context.suspensions.cancelUnclaimed(agentId, at);
  suspensionEvents(context.events, { by: 'velocity_breaker', agentId, at, cancelled });
  auditSuspension(context.audit, { actor: LEDGER_ACTOR, by: 'velocity_breaker', agentId, reason, at, cancelled: cancelled.length });
  // Waiting would not help any more: the agent is suspended until an operator resumes it.
  return forbidden(AGENT_SUSPENDED, { suspended_by: 'velocity_breaker' });
}
