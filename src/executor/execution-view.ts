import { redactSecretShapes } from '../domain/secret-text.js';
import { recommendedAction } from './domain/execution-states.js';
import type { ArtifactRow, ExecutionRow, ProviderAttemptRow, ReceiptRow } from './store/execution-reads.js';
import type { ExecutionStore } from './store/execution-store.js';

const iso = (ms: bigint | null) => (ms === null ? null : new Date(Number(ms)).toISOString());

/**
 * Execution detail (`GET /v1/executions/{id}`): explicit state and phase, target, authorization
 * summary, frozen pricing snapshot, provider attempts without any URL, receipt, timestamps and a
 * recommended operator action. Storage paths and polling URLs never appear.
 */
export function executionDetail(store: ExecutionStore, executionId: string, known?: ExecutionRow) {
  const row = known ?? store.execution(executionId);
  if (row === undefined) return undefined;
  const receipt = store.receipt(executionId);
  const attempts = store.providerAttempts(executionId);
  const stored = store.artifactTally(executionId);
  const request = JSON.parse(row.request_json) as { input: Record<string, unknown> };
  return {
    execution_id: row.execution_id,
    workflow_id: row.workflow_id,
    state: row.state,
    phase: row.phase,
    state_reason: row.state_reason,
    target_id: row.target_id,
    // A prompt stored before secret-shaped text was refused is shown without the secret.
    input: typeof request.input.prompt === 'string' ? { ...request.input, prompt: redactSecretShapes(request.input.prompt) } : request.input,
    authorization: {
      spend_auth_token_id: row.spend_auth_token_id,
      account_id: row.account_id,
      agent_id: row.agent_id,
      held_units: row.authorization_held_units,
      units_scale: 6,
      held_cents: row.authorization_held_cents,
      currency: row.currency,
    },
    pricing_snapshot: JSON.parse(row.pricing_snapshot) as unknown,
    provider_attempts: attempts.map((attempt) => ({
      attempt_id: attempt.attempt_id,
      attempt_number: Number(attempt.attempt_number),
      state: attempt.state,
      request_id: attempt.request_id,
      checkpointed: attempt.operation_id !== null,
      deadline_at: iso(attempt.deadline_at),
      exact_amount: attempt.exact_amount,
      scale: attempt.scale === null ? null : Number(attempt.scale),
      currency: attempt.currency,
    })),
    receipt:
      receipt === undefined
        ? null
        : {
            receipt_id: receipt.receipt_id,
            exact_amount: receipt.exact_amount,
            scale: Number(receipt.scale),
            amount_units: receipt.amount_units,
            currency: receipt.currency,
            provider_request_id: receipt.provider_request_id,
            receipt_shape: receipt.receipt_shape,
            ledger_settlement_id: receipt.ledger_settlement_id,
            created_at: iso(receipt.created_at),
          },
    artifact_count: stored.count,
    recommended_action: recommendedAction(row.state, row.state_reason),
    timeline: executionTimeline(store, row, receipt, attempts, stored.lastAt),
    created_at: iso(row.created_at),
    updated_at: iso(row.updated_at),
  };
}

/**
 * When each step of an execution happened (ISO 8601, null until it has): admitted, submitted
 * (the first attempt was recorded, just before its bytes left), checkpointed (the provider's
 * operation was recorded), stored (the last artifact), and settled or released. The store keeps
 * no time of its own for a settlement: it is the resolution's time for a reconciled execution,
 * else the final state's write, which follows the ledger's answer.
 */
function executionTimeline(store: ExecutionStore, row: ExecutionRow, receipt: ReceiptRow | undefined, attempts: readonly ProviderAttemptRow[], lastStoredAt: bigint | null) {
  const checkpointed = attempts.find((attempt) => attempt.operation_id !== null);
  const resolution = store.resolution(row.execution_id);
  const final = row.state === 'succeeded' || row.state === 'failed' ? row.updated_at : null;
  const settledAt = resolution?.resolution === 'settled' ? resolution.resolved_at : receipt?.ledger_settlement_id != null && row.state === 'succeeded' ? final : null;
  const releasedAt = resolution?.resolution === 'released' ? resolution.resolved_at : resolution === undefined && row.state === 'failed' ? final : null;
  return {
    admitted_at: iso(row.created_at),
    submitted_at: iso(attempts[0]?.created_at ?? null),
    checkpointed_at: iso(checkpointed?.submit_settled_at ?? null),
    stored_at: iso(lastStoredAt),
    settled_at: iso(settledAt),
    released_at: iso(releasedAt),
  };
}

/**
 * One execution as the list (`GET /v1/executions`) shows it: state and phase, who and what,
 * requested and stored images, the amount held and the exact cost once a receipt is kept.
 * The prompt is left to the detail.
 */
export function executionSummary(store: ExecutionStore, row: ExecutionRow) {
  const request = JSON.parse(row.request_json) as { input: { image_count?: unknown; image_size?: unknown } };
  const receipt = store.receipt(row.execution_id);
  return {
    execution_id: row.execution_id,
    state: row.state,
    phase: row.phase,
    state_reason: row.state_reason,
    agent_id: row.agent_id,
    target_id: row.target_id,
    spend_auth_token_id: row.spend_auth_token_id,
    image_count: typeof request.input.image_count === 'number' ? request.input.image_count : null,
    image_size: typeof request.input.image_size === 'string' ? request.input.image_size : null,
    artifact_count: store.artifactTally(row.execution_id).count,
    held_units: row.authorization_held_units,
    cost_units: receipt?.amount_units ?? null,
    units_scale: 6,
    currency: row.currency,
    created_at: iso(row.created_at),
    updated_at: iso(row.updated_at),
  };
}

/** One artifact as callers see it: identity, size, type, digest and where to fetch the bytes. */
export function artifactView(row: ArtifactRow) {
  return {
    artifact_id: row.artifact_id,
    // One number convention (docs/executor.md): amounts are digit strings; counts, scales, sizes
    // and ordinals are JSON integers (SQLite hands them over as bigint); times are ISO 8601.
    ordinal: Number(row.ordinal),
    media_type: row.media_type,
    size_bytes: Number(row.size_bytes),
    sha256: row.sha256,
    width: row.width === null ? null : Number(row.width),
    height: row.height === null ? null : Number(row.height),
    content_path: `/v1/executions/${row.execution_id}/artifacts/${row.artifact_id}/content`,
    created_at: iso(row.created_at),
  };
}
