import type { LedgerAuthorization, LedgerResolution } from '../wire/answers.js';
import { UNITS_SCALE } from '../../domain/money.js';
import { redactSecretShapes } from '../../domain/secret-text.js';
import type { AuthorizationStatus } from '../authorization-rules.js';

/* The ledger's rows as SQLite returns them (integers as bigint), and their views as the API answers them. */

export interface AuthorizationRow {
  token_id: string;
  account_id: string;
  agent_id: string;
  amount_units: bigint;
  units_scale: bigint;
  currency: string;
  amount_cents: bigint;
  status: AuthorizationStatus;
  purpose: string | null;
  decided_by: string | null;
  /** The named approver who decided it (migration 7); null for the policy, an unnamed credential, or older rows. */
  decided_by_name: string | null;
  decision_reason: string | null;
  execution_id: string | null;
  created_at: bigint;
  decided_at: bigint | null;
  claimed_at: bigint | null;
  closed_at: bigint | null;
  expires_at: bigint;
  /** The policy the request was decided under (migration 3; null for older rows). */
  policy_version: bigint | null;
  policy_per_authorization_cap_units: bigint | null;
  policy_daily_cap_units: bigint | null;
  policy_approval_threshold_units: bigint | null;
  /** The executor credential that claimed it (migration 4; null before, unless attributable). */
  claimed_by: string | null;
  /** Why it was cancelled (`agent_suspended`), exactly when its status is `cancelled` (migration 5). */
  cancellation_reason: string | null;
  /** The agent's `Idempotency-Key` and the SHA-256 fingerprint of its request (migration 7; both null without a key). Never shown. */
  idempotency_key: string | null;
  request_fingerprint: string | null;
  /** The executor target and the prompt the request pays for (migration 10; null when it named none). */
  target_id: string | null;
  prompt: string | null;
  /** When the agent last asked after it (migration 10): a client is still waiting. */
  client_seen_at: bigint | null;
  /** Its settlement's amount once settled (migration 17, a trigger's copy for the sums' indexes). Never shown. */
  settled_units: bigint | null;
}

export interface SettlementRow {
  settlement_id: string;
  token_id: string;
  receipt_id: string;
  execution_id: string;
  receipt_shape: 'precise' | 'legacy_cents';
  amount_units: bigint;
  amount_cents: bigint;
  currency: string;
  provider_request_id: string | null;
  receipt_fingerprint: string;
  created_at: bigint;
}

export interface ReleaseRow {
  reason: string;
  created_at: bigint;
}

export interface ReconciliationRecordRow {
  record_id: string;
  token_id: string;
  execution_id: string;
  reason: string;
  evidence: string;
  status: string;
  resolution: string | null;
  resolved_by: string | null;
  resolution_note: string | null;
  resolved_at: bigint | null;
  created_at: bigint;
}

export function iso(ms: bigint): string;
export function iso(ms: bigint | null): string | null;
export function iso(ms: bigint | null): string | null {
  return ms === null ? null : new Date(Number(ms)).toISOString();
}

/** An authorization as agents, approvers and the admin see it, with its settlement or release. */
export function authorizationView(row: AuthorizationRow, settlement: SettlementRow | undefined, release: ReleaseRow | undefined): LedgerAuthorization {
  return {
    token_id: row.token_id,
    account_id: row.account_id,
    agent_id: row.agent_id,
    status: row.status,
    amount_units: row.amount_units,
    units_scale: UNITS_SCALE,
    currency: row.currency,
    amount_cents: row.amount_cents,
    // Text stored before secret-shaped text was refused is shown without the secret.
    purpose: row.purpose === null ? null : redactSecretShapes(row.purpose),
    execution_id: row.execution_id,
    decided_by: row.decided_by,
    decided_by_name: row.decided_by_name === null ? null : redactSecretShapes(row.decided_by_name),
    decision_reason: row.decision_reason === null ? null : redactSecretShapes(row.decision_reason),
    policy:
      row.policy_approval_threshold_units === null || row.policy_per_authorization_cap_units === null || row.policy_daily_cap_units === null
        ? null
        : {
            version: row.policy_version,
            per_authorization_cap_units: row.policy_per_authorization_cap_units,
            daily_cap_units: row.policy_daily_cap_units,
            approval_threshold_units: row.policy_approval_threshold_units,
          },
    created_at: iso(row.created_at),
    decided_at: iso(row.decided_at),
    expires_at: iso(row.expires_at),
    settlement: settlement
      ? {
          settlement_id: settlement.settlement_id,
          receipt_id: settlement.receipt_id,
          receipt_shape: settlement.receipt_shape,
          amount_units: settlement.amount_units,
          amount_cents: settlement.amount_cents,
          settled_at: iso(settlement.created_at),
        }
      : null,
    release: release ? { reason: release.reason, released_at: iso(release.created_at) } : null,
    cancellation: row.cancellation_reason === null ? null : { reason: row.cancellation_reason, cancelled_at: iso(row.closed_at ?? row.created_at) },
    target_id: row.target_id,
    prompt: row.prompt === null ? null : redactSecretShapes(row.prompt),
    client_waiting: row.client_seen_at === null ? null : { last_seen_at: iso(row.client_seen_at) },
  };
}

/** What the executor sees: authoritative account, agent, held amount, status and expiry. */
export function resolutionView(row: AuthorizationRow): LedgerResolution {
  return {
    token_id: row.token_id,
    account_id: row.account_id,
    agent_id: row.agent_id,
    status: row.status,
    held_units: row.amount_units,
    units_scale: UNITS_SCALE,
    currency: row.currency,
    expires_at: iso(row.expires_at),
    execution_id: row.execution_id,
  };
}

/** A reconciliation record as the executor and the reconciliation credential see it. */
export function recordView(row: ReconciliationRecordRow) {
  return {
    record_id: row.record_id,
    token_id: row.token_id,
    execution_id: row.execution_id,
    reason: row.reason,
    evidence: JSON.parse(row.evidence) as unknown,
    status: row.status,
    resolution: row.resolution,
    resolved_by: row.resolved_by,
    resolution_note: row.resolution_note === null ? null : redactSecretShapes(row.resolution_note),
    created_at: iso(row.created_at),
    resolved_at: iso(row.resolved_at),
  };
}

export type ReconciliationRecordView = ReturnType<typeof recordView>;
