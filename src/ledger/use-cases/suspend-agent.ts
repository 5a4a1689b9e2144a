import type { LedgerAgentSuspension } from '../wire/answers.js';
import { forbidden, notFound, type LedgerError } from '../ledger-error.js';
import { agentView, type AgentRow } from '../store/admin-store.js';
import type { AuditActor, AuditStore } from '../store/audit-store.js';
import { iso } from '../store/ledger-rows.js';
import { AGENT_SUSPENDED, type SuspendedBy, type SuspensionStore } from '../store/suspension-store.js';
import type { VelocityStore } from '../store/velocity-store.js';
import type { EventStore } from '../store/event-store.js';
import type { AuthorizationRow } from '../store/ledger-rows.js';
import { authorizationEvent } from './authorization-events.js';
import { commitThenReach, expireAuthorizations, type CommitContext } from './current-authorization.js';

/*
 * An operator's kill switch (docs/ledger.md "Suspending an agent"). Suspending an agent refuses
 * its new spend requests from then on and cancels its requested and approved authorizations that
 * no execution claimed — in one IMMEDIATE transaction, so nobody ever sees half of it: requests
 * refused while an approved authorization is still claimable, or the reverse. A claim is checked
 * in its own transaction, so it lands before the suspension (the execution runs on and settles,
 * releases or parks as ever: money truth wins over the switch) or after it (refused:
 * `authorization_cancelled`). Resuming lets the agent ask again; what was cancelled stays
 * cancelled. Both are idempotent: a repeat changes nothing and answers `changed: false`.
 * Each change is in the audit trail, in its own transaction (store/audit-store.ts); a repeat is not.
 */

export interface SuspensionContext extends CommitContext {
  readonly suspensions: SuspensionStore;
  readonly velocity: VelocityStore;
  readonly audit: AuditStore;
}

function requireAgent(context: SuspensionContext, agentId: string): AgentRow {
  const row = context.suspensions.agent(agentId);
  if (!row) throw notFound();
  return row;
}

function answer(context: SuspensionContext, agentId: string, cancelled: number, changed: boolean): LedgerAgentSuspension {
  return { agent: agentView(requireAgent(context, agentId)), cancelled_authorizations: cancelled, changed };
}

/** Suspends the agent and cancels its unclaimed authorizations; a suspended agent stays as it is (its first reason kept). */
export function suspendAgent(context: SuspensionContext, agentId: string, reason: string | null, actor: AuditActor): LedgerAgentSuspension {
  const { suspensions, now, crash } = context;
  return commitThenReach(context, 'ledger.after_suspend_commit', () => {
    if (requireAgent(context, agentId).status === 'suspended') return answer(context, agentId, 0, false);
    // Expiries the clock has reached are persisted first: those authorizations expired, they are not cancelled.
    expireAuthorizations(context);
    const at = now();
    suspensions.suspend(agentId, reason, at, 'operator');
    // Inside the open transaction: a kill here must leave no trace of the suspension at all.
    crash.reach('ledger.during_suspend');
    const cancelled = suspensions.cancelUnclaimed(agentId, at);
    suspensionEvents(context.events, { by: 'operator', agentId, at, cancelled });
    auditSuspension(context.audit, { actor, by: 'operator', agentId, reason, at, cancelled: cancelled.length });
    return answer(context, agentId, cancelled.length, true);
  });
}

/**
 * A suspension's events, in its transaction: `agent.suspended` (by whom; never the operator's
 * free-text reason), then `authorization.cancelled` for each authorization it cancelled.
 */
export function suspensionEvents(events: EventStore, suspension: { by: SuspendedBy; agentId: string; at: number; cancelled: readonly AuthorizationRow[] }): void {
  const { by, agentId, at, cancelled } = suspension;
  events.append({ type: 'agent.suspended', at, agentId, details: { by, cancelled_authorizations: cancelled.length } });
  for (const row of cancelled) authorizationEvent(events, 'authorization.cancelled', row, at, { reason: AGENT_SUSPENDED, status_before: row.status });
}

/** A suspension in the audit trail (an operator's, or the velocity breaker's as the ledger's own act), in its transaction. */
export function auditSuspension(audit: AuditStore, suspension: { actor: AuditActor; by: SuspendedBy; agentId: string; reason: string | null; at: number; cancelled: number }): void {
  audit.record({
    actor: suspension.actor,
    action: 'agent_suspended',
    agentId: suspension.agentId,
    subjectId: suspension.agentId,
    before: { status: 'active' },
    after: { status: 'suspended', suspended_by: suspension.by, cancelled_authorizations: suspension.cancelled },
    reason: suspension.reason,
    at: suspension.at,
  });
}

/** Lets a suspended agent request spend again; an active agent stays as it is. Cancelled authorizations stay cancelled. */
export function resumeAgent(context: SuspensionContext, agentId: string, actor: AuditActor): LedgerAgentSuspension {
  return commitThenReach(context, 'ledger.after_resume_commit', () => {
    const suspended = requireAgent(context, agentId);
    if (suspended.status === 'active') return answer(context, agentId, 0, false);
    context.suspensions.resume(agentId);
    // The runaway-loop breaker counts afresh from the resumption (its requests still count against the limits).
    context.velocity.forgetRefusals(agentId);
    const at = context.now();
    context.events.append({ type: 'agent.resumed', at, agentId, details: { by: 'operator', suspended_by: suspended.suspended_by ?? 'operator' } });
    context.audit.record({
      actor,
      action: 'agent_resumed',
      agentId,
      subjectId: agentId,
      before: { status: 'suspended', suspended_by: suspended.suspended_by ?? 'operator', suspended_at: iso(suspended.suspended_at) },
      after: { status: 'active' },
      at,
    });
    return answer(context, agentId, 0, true);
  });
}

/**
 * The refusal of a suspended agent's new spend request (403 `forbidden` / `agent_suspended`; the
 * breaker's suspension says so with `suspended_by`), or null; call inside the request's transaction.
 */
export function suspendedRefusal(suspensions: SuspensionStore, agentId: string): LedgerError | null {
  const agent = suspensions.agent(agentId);
  if (agent?.status !== 'suspended') return null;
  return forbidden(AGENT_SUSPENDED, agent.suspended_by === 'velocity_breaker' ? { suspended_by: 'velocity_breaker' } : undefined);
}
