import type { Facts } from './facts.ts';
import type { AuditEventRow, AuditRows } from './read-databases.ts';
import type { Fail } from './report.ts';

/*
 * The ledger's audit trail of operator actions (its migration "operator actions are audited"):
 * every operator change made since the trail began (the migration's applied_at) has exactly one
 * audit event, written in the change's own transaction — so it carries the very time the change
 * records, and the credential that made it (`operator_action_audited`). A suspension by the
 * velocity breaker, the default policy applied at start and the ledger's own admin credential are
 * the ledger's acts (actor `ledger`), and so is an agent added by an executor host's enrolment
 * (with the `enrolment_redeemed` event of the same time naming it). The reverse, for what stays as it was decided: an event of a
 * decision, a resolution or an agent added names what the ledger holds (`audit_event_has_change`).
 * From the migration that gave them actions of their own ("webhook sinks and the installation
 * budget are audited"): a webhook sink added or removed, and the installation budget changed
 * (`budget_changed`; before that migration, and kept so, `policy_changed` of subject
 * `installation_budget`).
 * Known from the spec and the migration, not from the code that writes the events.
 */

const DECIDED_BY_POLICY = 'policy';
const CLOSED_BY_EXECUTOR = 'executor';

const byLedger = (event: AuditEventRow) => event.actor_kind === 'ledger';
const byACredential = (event: AuditEventRow) => event.actor_kind !== 'ledger';
const byCredential = (credentialId: string) => (event: AuditEventRow) => event.actor_credential_id === credentialId;
/** The ledger registers its own admin credential; an admin registers the others. */
const byAnyone = () => true;

/** An approved authorization may have moved on (claimed, settled, expired…); a denied one stays denied. */
const decisionOf = (status: string) => (status === 'denied' ? 'authorization_denied' : 'authorization_approved');

function afterVersion(event: AuditEventRow): string | null {
  if (event.after === null) return null;
  const after = JSON.parse(event.after) as { version?: unknown };
  return typeof after.version === 'string' ? after.version : null;
}

export function checkAudit(facts: Facts, fail: Fail): void {
  const { audit } = facts;
  // A ledger from before the trail: nothing to check.
  if (audit === null) return;
  const { since, events } = audit;
  const eventsOn = (action: string, subject: string) => events.filter((event) => event.action === action && event.subject_id === subject);

  /** The change made at `at` has exactly one event among `candidates` at that time, and `by` accepts who it names. */
  const audited = (subject: string, what: string, candidates: readonly AuditEventRow[], at: bigint, by: (event: AuditEventRow) => boolean) => {
    const atTime = candidates.filter((event) => event.at === at);
    if (atTime.length !== 1) {
      fail('operator_action_audited', subject, `${what} at ${String(at)}: ${atTime.length} audit events at that time (${candidates.length} of that action)`);
      return;
    }
    const [event] = atTime;
    if (event !== undefined && !by(event)) fail('operator_action_audited', subject, `${what}: its audit event names ${event.actor_kind} ${event.actor_credential_id ?? ''}`.trimEnd());
  };

  for (const agent of facts.agents) {
    if (agent.created_at >= since) {
      // An executor host's enrolment adds its agent when the token is redeemed (the ledger
      // enrolment migration): the ledger's act, in the redemption's transaction, so the trail
      // goes on from the agent's event with the ledger's registrations of the host's credentials
      // and then the `enrolment_redeemed` that names the agent. Otherwise an operator's.
      const redeemed = addedByRedemption(events, agent.agent_id);
      audited(agent.agent_id, 'agent added', eventsOn('agent_added', agent.agent_id), agent.created_at, redeemed ? byLedger : byACredential);
    }
    if (agent.status === 'suspended' && agent.suspended_at !== null && agent.suspended_at >= since) {
      const breaker = agent.suspended_by === 'velocity_breaker';
      audited(agent.agent_id, `suspended by ${breaker ? 'the velocity breaker' : 'an operator'}`, eventsOn('agent_suspended', agent.agent_id), agent.suspended_at, breaker ? byLedger : byACredential);
    }
  }
  for (const credential of facts.credentials) {
    if (credential.created_at >= since) audited(credential.credential_id, 'credential registered', eventsOn('credential_registered', credential.credential_id), credential.created_at, byAnyone);
  }
  // A policy past its first version was changed: by an operator, or the default applied at a start.
  for (const policy of facts.policies) {
    if (policy.version <= 1n || policy.updated_at < since) continue;
    const version = String(policy.version);
    const changes = eventsOn('policy_changed', policy.agent_id).filter((event) => afterVersion(event) === version);
    if (changes.length !== 1) fail('operator_action_audited', policy.agent_id, `policy at version ${version}: ${changes.length} audit events made it`);
    else if (changes[0]?.at !== policy.updated_at) fail('operator_action_audited', policy.agent_id, `policy at version ${version}: its audit event is not of the change's time`);
  }
  checkSinksAndBudget(audit, audited, eventsOn, fail);
  for (const authorization of facts.authorizations) {
    const { decided_by: decidedBy, decided_at: decidedAt } = authorization;
    if (decidedBy === null || decidedBy === DECIDED_BY_POLICY || decidedAt === null || decidedAt < since) continue;
    const action = decisionOf(authorization.status);
    audited(authorization.token_id, `${action} by ${decidedBy}`, eventsOn(action, authorization.token_id), decidedAt, byCredential(decidedBy));
  }
  for (const record of facts.records) {
    const { resolved_by: resolvedBy, resolved_at: resolvedAt } = record;
    if (record.status !== 'resolved' || resolvedBy === null || resolvedBy === CLOSED_BY_EXECUTOR || resolvedAt === null || resolvedAt < since) continue;
    audited(record.record_id, `resolved by ${resolvedBy}`, eventsOn('reconciliation_resolved', record.record_id), resolvedAt, byCredential(resolvedBy));
  }
  checkEventsHaveChanges(facts, audit, fail);
}

/** Whether the agent's `agent_added` event is followed, past the ledger's credential registrations, by the `enrolment_redeemed` that names it. */
function addedByRedemption(events: readonly AuditEventRow[], agentId: string): boolean {
  const added = events.findIndex((event) => event.action === 'agent_added' && event.subject_id === agentId);
  if (added < 0) return false;
  const next = events.slice(added + 1).find((event) => !(event.action === 'credential_registered' && byLedger(event)));
  return next !== undefined && next.action === 'enrolment_redeemed' && byLedger(next) && next.agent_id === agentId;
}

const INSTALLATION_BUDGET = 'installation_budget';

/** Webhook sinks added and removed since they are audited, and the installation budget's current version, each with its one event. */
function checkSinksAndBudget(
  audit: AuditRows,
  audited: (subject: string, what: string, candidates: readonly AuditEventRow[], at: bigint, by: (event: AuditEventRow) => boolean) => void,
  eventsOn: (action: string, subject: string) => AuditEventRow[],
  fail: Fail,
): void {
  const { ownActionsSince: ownSince } = audit;
  if (ownSince !== null) {
    for (const sink of audit.webhookSinks) {
      if (sink.created_at >= ownSince) audited(sink.sink_id, 'webhook sink added', eventsOn('webhook_added', sink.sink_id), sink.created_at, byACredential);
      if (sink.removed_at !== null && sink.removed_at >= ownSince) audited(sink.sink_id, 'webhook sink removed', eventsOn('webhook_removed', sink.sink_id), sink.removed_at, byACredential);
    }
  }
  // Past its first version the budget was changed by an operator: a budget_changed since the migration, a policy_changed before it.
  const budget = audit.installationBudget;
  if (budget === null || budget.version <= 1n || budget.updated_at < audit.since) return;
  const action = ownSince !== null && budget.updated_at >= ownSince ? 'budget_changed' : 'policy_changed';
  const version = String(budget.version);
  const changes = eventsOn(action, INSTALLATION_BUDGET).filter((event) => afterVersion(event) === version);
  if (changes.length !== 1) fail('operator_action_audited', INSTALLATION_BUDGET, `installation budget at version ${version}: ${changes.length} ${action} events made it`);
  else if (changes[0]?.at !== budget.updated_at) fail('operator_action_audited', INSTALLATION_BUDGET, `installation budget at version ${version}: its audit event is not of the change's time`);
  else if (changes[0].actor_kind === 'ledger') fail('operator_action_audited', INSTALLATION_BUDGET, `installation budget at version ${version}: its audit event names ledger`);
}

/** Every event of a decision, a resolution, an agent added or a webhook sink added or removed names what the ledger holds so. */
function checkEventsHaveChanges(facts: Facts, audit: AuditRows, fail: Fail): void {
  const { events } = audit;
  const sinkOf = new Map(audit.webhookSinks.map((sink) => [sink.sink_id, sink]));
  const recordOf = new Map(facts.records.map((record) => [record.record_id, record]));
  const agents = new Set(facts.agents.map((agent) => agent.agent_id));
  for (const event of events) {
    const said = `audit event ${String(event.audit_id)} (${event.action} by ${event.actor_credential_id ?? event.actor_kind})`;
    if (event.action === 'authorization_approved' || event.action === 'authorization_denied') {
      const authorization = facts.authorizationOf.get(event.subject_id);
      if (authorization?.decided_by !== event.actor_credential_id || decisionOf(authorization.status) !== event.action || authorization.decided_at !== event.at) {
        fail('audit_event_has_change', event.subject_id, `${said}: the ledger holds no such decision`);
      }
    } else if (event.action === 'reconciliation_resolved') {
      const record = recordOf.get(event.subject_id);
      if (record?.status !== 'resolved' || record.resolved_by !== event.actor_credential_id || record.resolved_at !== event.at) {
        fail('audit_event_has_change', event.subject_id, `${said}: the ledger holds no such resolution`);
      }
    } else if (event.action === 'agent_added' && !agents.has(event.subject_id)) {
      fail('audit_event_has_change', event.subject_id, `${said}: the ledger has no such agent`);
    } else if (event.action === 'webhook_added' && sinkOf.get(event.subject_id)?.created_at !== event.at) {
      fail('audit_event_has_change', event.subject_id, `${said}: the ledger added no such sink then`);
    } else if (event.action === 'webhook_removed' && sinkOf.get(event.subject_id)?.removed_at !== event.at) {
      fail('audit_event_has_change', event.subject_id, `${said}: the ledger removed no such sink then`);
    }
  }
}
