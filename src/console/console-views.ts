import { atUnitsScale } from '../domain/money.js';
import type { ArtifactView, ExecutionDetail, ExecutionSummary, ReconciliationEntry } from '../executor/client/executor-client.js';
import type { StatusResult } from '../launcher/status/stack-status.js';
import type { GenerationEngine } from '../launcher/generations/generation-engine.js';
import { auditChange } from '../ledger/client/ledger-audit.js';
import type { LedgerAgent, LedgerAuditEvent, LedgerAuthorization, LedgerEvent, LedgerPolicy, LedgerSpending } from '../ledger/wire/answers.js';
import { agentView, policyView } from './agent-views.js';
import { maybeMoney, money } from './money-view.js';
import { jobDelivery } from '../stack-client/paid-job/job-delivery.js';

/*
 * What the console's JSON answers hold: views picked field by field from the services' answers,
 * so nothing a page does not show (a capability, a service URL, a storage path) can reach the
 * browser by accident. Every amount travels as its exact digit string with a display string
 * formatted here (formatUnits), so the page never does arithmetic on money.
 */

export interface EngineView {
  readonly mode: string;
  /** Where the Temporal frontend answers (`grpc://host:port`); null for the embedded engine or when unknown. */
  readonly address: string | null;
  /** The Temporal web UI (managed_local: the one the executor runs; external: the configured one). */
  readonly ui_url: string | null;
}

/** The engine as the overview shows it; `unknown` when the generation's configuration could not be read. */
function engineView(engine: GenerationEngine | null): EngineView {
  return engine === null ? { mode: 'unknown', address: null, ui_url: null } : { mode: engine.mode, address: engine.address, ui_url: engine.ui_url };
}

export function overviewView(status: StatusResult, agents: readonly { agent: LedgerAgent; spending: LedgerSpending }[] | null) {
  return {
    profile: status.profile,
    state: status.state,
    usable: status.usable,
    next_step: status.next_step,
    generation_id: status.generation_id,
    checked_at: status.checked_at,
    components: status.components.map((component) => ({
      name: component.name,
      state: component.state,
      ready: component.ready,
      /** Why it is not ready (`HTTP 503 (disk_full: /path)`), as `stack status` says it. */
      probe_error: component.probe_error,
      pid: component.pid,
      port: component.port,
      restarts: component.restarts,
      uptime_ms: component.uptime_ms,
    })),
    engine: engineView(status.workflow_engine),
    awaiting_human: status.awaiting_human,
    /** Executions admitted and not finished: a stop lets them resume at the next start (`stack stop --wait` lets them finish first). */
    executions_in_flight: status.executions_in_flight,
    pending_approvals: status.approvals_pending,
    spend: agents?.map(({ agent, spending }) => agentView(agent, spending)) ?? [],
  };
}

/** Agents' names by id, for views that name an agent (an agent the ledger no longer lists shows its id alone). */
export type AgentNames = ReadonlyMap<string, string>;

/** The ledger's authorizations by id: the prompt an execution pays for is kept there (the executor's list carries none). */
export type AuthorizationsById = ReadonlyMap<string, LedgerAuthorization>;

export function executionRowView(execution: ExecutionSummary, names: AgentNames, authorizations: AuthorizationsById) {
  return {
    execution_id: execution.execution_id,
    state: execution.state,
    phase: execution.phase,
    state_reason: execution.state_reason,
    agent_id: execution.agent_id,
    agent_name: names.get(execution.agent_id) ?? null,
    target_id: execution.target_id,
    authorization_id: execution.spend_auth_token_id,
    /** The prompt the authorization paid for, as the ledger keeps it (secret shapes redacted); null when it named none or is not known. */
    prompt: authorizations.get(execution.spend_auth_token_id)?.prompt ?? null,
    image_count: execution.image_count,
    artifact_count: execution.artifact_count,
    /** Succeeded with fewer images than asked (billed for those delivered). */
    partial: execution.state === 'succeeded' && execution.image_count !== null && execution.artifact_count < execution.image_count,
    held: maybeMoney(execution.held_units, execution.currency),
    cost: maybeMoney(execution.cost_units, execution.currency),
    created_at: execution.created_at,
  };
}

/** The console's own path of an artifact's bytes (proxied: the executor's URL never reaches the page). */
export function artifactPath(executionId: string, artifactId: string): string {
  return `/api/executions/${executionId}/artifacts/${artifactId}`;
}

/** Who decided a request: the policy (below the approval threshold), a person (a named approver), or an unnamed approver credential. */
function decider(authorization: LedgerAuthorization): { kind: 'policy' | 'person' | 'credential'; name: string | null } | null {
  if (authorization.decided_by === null) return null;
  if (authorization.decided_by === 'policy') return { kind: 'policy', name: null };
  return authorization.decided_by_name === null ? { kind: 'credential', name: authorization.decided_by } : { kind: 'person', name: authorization.decided_by_name };
}

/**
 * The start of an execution's timeline, from its authorization at the ledger: when it was
 * requested (amount, target), how long it waited for a human if one had to decide, who decided
 * and why. Null when the ledger no longer answers for it.
 */
export function authorizationStepsView(authorization: LedgerAuthorization | null) {
  if (authorization === null) return null;
  const decidedBy = decider(authorization);
  const human = decidedBy !== null && decidedBy.kind !== 'policy';
  return {
    token_id: authorization.token_id,
    status: authorization.status,
    requested_at: authorization.created_at,
    amount: money(authorization.amount_units, authorization.currency),
    target_id: authorization.target_id,
    /** The policy decided it at once (null), or a human did after this many milliseconds. */
    waited_ms: human && authorization.decided_at !== null ? Math.max(0, Date.parse(authorization.decided_at) - Date.parse(authorization.created_at)) : null,
    decided_at: authorization.decided_at,
    decided_by: decidedBy,
    decision: authorization.status === 'denied' ? 'denied' : authorization.decided_at === null ? null : 'approved',
    reason: authorization.decision_reason,
  };
}

export function executionDetailView(detail: ExecutionDetail, artifacts: readonly ArtifactView[], names: AgentNames, authorization: LedgerAuthorization | null = null) {
  const { currency } = detail.authorization;
  return {
    execution_id: detail.execution_id,
    state: detail.state,
    phase: detail.phase,
    state_reason: detail.state_reason,
    recommended_action: detail.recommended_action,
    /** Images delivered against those asked once it succeeded, and how many the receipt bills (the stack client's reading, as `lexec run` reports it). */
    delivery: jobDelivery(detail),
    target_id: detail.target_id,
    prompt: detail.input.prompt ?? null,
    image_count: detail.input.image_count ?? null,
    image_size: detail.input.image_size ?? null,
    agent_id: detail.authorization.agent_id,
    agent_name: names.get(detail.authorization.agent_id) ?? null,
    spend_auth_token_id: detail.authorization.spend_auth_token_id,
    held: maybeMoney(detail.authorization.held_units, currency),
    /** The timeline's first steps: the authorization requested, the wait for a human, the decision. */
    authorization: authorizationStepsView(authorization),
    timeline: detail.timeline,
    provider_attempts: detail.provider_attempts.map((attempt) => ({
      attempt_number: attempt.attempt_number,
      state: attempt.state,
      request_id: attempt.request_id,
      checkpointed: attempt.checkpointed,
      deadline_at: attempt.deadline_at,
      // An attempt's exact amount is at its own scale (2 for one converted from v4.3 cents).
      amount: attempt.exact_amount === null || attempt.scale === null ? null : maybeMoney(atUnitsScale(attempt.exact_amount, attempt.scale), attempt.currency ?? currency),
    })),
    receipt:
      detail.receipt === null
        ? null
        : {
            receipt_id: detail.receipt.receipt_id,
            amount: money(detail.receipt.amount_units, detail.receipt.currency),
            provider_request_id: detail.receipt.provider_request_id,
            ledger_settlement_id: detail.receipt.ledger_settlement_id,
            created_at: detail.receipt.created_at,
          },
    artifacts: artifacts.map((artifact) => ({
      artifact_id: artifact.artifact_id,
      ordinal: artifact.ordinal,
      media_type: artifact.media_type,
      size_bytes: artifact.size_bytes.toString(),
      sha256: artifact.sha256,
      path: artifactPath(detail.execution_id, artifact.artifact_id),
    })),
    created_at: detail.created_at,
    updated_at: detail.updated_at,
  };
}

/** `lexec run` asks after its request every second and the ledger records it every 5 s: unseen this long, its client has likely gone. */
export const CLIENT_GONE_AFTER_MS = 30_000;

/** Whether a client still waits on a pending request: when it last asked and how long ago (the console's clock). */
export function clientWaitingView(authorization: LedgerAuthorization, now: number) {
  const lastSeen = authorization.client_waiting?.last_seen_at ?? null;
  if (lastSeen === null) return { waiting: false, last_seen_at: null, seen_seconds_ago: null };
  const ago = Math.max(0, now - Date.parse(lastSeen));
  return { waiting: ago <= CLIENT_GONE_AFTER_MS, last_seen_at: lastSeen, seen_seconds_ago: Math.floor(ago / 1000) };
}

export function approvalView(authorization: LedgerAuthorization, agentName: string | null, policy: LedgerPolicy | null, now: number = Date.now()) {
  return {
    token_id: authorization.token_id,
    agent_id: authorization.agent_id,
    agent_name: agentName,
    amount: money(authorization.amount_units, authorization.currency),
    purpose: authorization.purpose,
    /** What it pays for: the executor target and the prompt (shown as text). */
    target_id: authorization.target_id,
    prompt: authorization.prompt,
    /** Whether the client that asked (a `lexec run`) is still waiting on it. */
    client: clientWaitingView(authorization, now),
    created_at: authorization.created_at,
    expires_at: authorization.expires_at,
    /** The policy the ledger decided this request under (null when it was made before the ledger kept it). */
    required_by:
      authorization.policy === null
        ? null
        : {
            version: authorization.policy.version === null ? null : authorization.policy.version.toString(),
            per_authorization_cap: money(authorization.policy.per_authorization_cap_units, authorization.currency),
            daily_cap: money(authorization.policy.daily_cap_units, authorization.currency),
            approval_threshold: money(authorization.policy.approval_threshold_units, authorization.currency),
          },
    /** The agent's policy now, which may have changed since. */
    policy: policy === null ? null : policyView(policy),
  };
}

export function reconciliationView(entry: ReconciliationEntry, names: AgentNames) {
  const agentId = entry.authorization.agent_id ?? null;
  return {
    execution_id: entry.execution_id,
    agent_id: agentId,
    agent_name: agentId === null ? null : (names.get(agentId) ?? null),
    state_reason: entry.state_reason,
    recommended_action: entry.recommended_action,
    target_id: entry.target_id,
    spend_auth_token_id: entry.authorization.spend_auth_token_id,
    held: money(entry.authorization.held_units, entry.authorization.currency),
    /** Images asked: a settlement bills 1 to this many. */
    image_count: entry.input?.image_count ?? null,
    /** A receipt is already kept (the ledger refused it): settling needs no image count. */
    receipt_kept: entry.receipt !== null,
    evidence: entry.evidence.map((attempt) => ({
      provider_request_id: attempt.provider_request_id,
      state: attempt.state,
      outcome_code: attempt.outcome_code,
      delivered_images: attempt.delivered_images === null ? null : String(attempt.delivered_images),
      submit_window: attempt.submit_window ?? null,
      correlation: attempt.correlation ?? null,
    })),
  };
}

/**
 * One operator action of the audit trail as the Audit view shows it: who (the credential's kind
 * and id, or the ledger; a person's name once credentials carry one), the agent by name, what it
 * acted on, what changed in one line (auditChange), and the operator's reason (the ledger
 * redacts secret-shaped text in it).
 */
export function auditEventView(event: LedgerAuditEvent, names: AgentNames) {
  return {
    audit_id: event.audit_id,
    at: event.at,
    actor_kind: event.actor_kind,
    actor_credential_id: event.actor_credential_id,
    actor_name: event.actor_name,
    action: event.action,
    agent_id: event.agent_id,
    agent_name: event.agent_id === null ? null : (names.get(event.agent_id) ?? null),
    subject_id: event.subject_id,
    change: auditChange(event),
    reason: event.reason,
  };
}

/** How a request that needed a human ended: decided by one (approved, denied), or left to expire or be cancelled while it waited. */
export function decidedRequestView(authorization: LedgerAuthorization, agentName: string | null) {
  const decidedBy = decider(authorization);
  const human = decidedBy !== null && decidedBy.kind !== 'policy';
  const outcome = human ? (authorization.status === 'denied' ? 'denied' : 'approved') : authorization.status;
  return {
    token_id: authorization.token_id,
    agent_id: authorization.agent_id,
    agent_name: agentName,
    amount: money(authorization.amount_units, authorization.currency),
    purpose: authorization.purpose,
    target_id: authorization.target_id,
    prompt: authorization.prompt,
    requested_at: authorization.created_at,
    outcome,
    decided_by: human ? decidedBy : null,
    /** When it was decided, or when it expired or was cancelled. */
    at: authorization.decided_at ?? authorization.cancellation?.cancelled_at ?? authorization.expires_at,
    reason: authorization.decision_reason ?? authorization.cancellation?.reason ?? null,
    /** What it is now (a decided request goes on: claimed, settled, released). */
    status: authorization.status,
  };
}

/** Whether a request waited for a human and is no longer waiting: a person decided it, or it expired or was cancelled undecided. */
export function wasDecidedByHumanOrLapsed(authorization: LedgerAuthorization): boolean {
  if (authorization.decided_by !== null) return authorization.decided_by !== 'policy';
  return authorization.status === 'expired' || authorization.status === 'cancelled';
}

/**
 * A ledger event as the console's live feed shows it: ids, type, time, agent, target, amount and
 * the event's ledger-made details. Events carry no prompt and no capability (docs/ledger.md
 * "Events"); the view passes only these fields.
 */
export function liveEventView(event: LedgerEvent) {
  return {
    event_id: event.event_id,
    type: event.type,
    at: event.at,
    agent_id: event.agent_id,
    agent_name: event.agent_name,
    target_id: event.target_id,
    authorization_id: event.authorization_id,
    amount: event.amount_units === null ? null : money(event.amount_units, event.currency),
    details: event.details,
  };
}
export type LiveEventView = ReturnType<typeof liveEventView>;
