import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import { canonicalJson } from '../domain/canonical-json.js';
import { NO_CRASH_POINTS, type CrashPoints } from '../crash-points.js';
import { priceModelSnapshotSchema, type PriceModelSnapshot } from '../domain/price-model-snapshot.js';
import type { ArtifactStore } from './artifact-store.js';
import { correlationOf } from './domain/correlation.js';
import type { ExecutionPhase } from './domain/execution-states.js';
import { costUnits } from './domain/pricing.js';
import { DEFAULT_POLLING, pollDelayMs, type PollingPolicy } from './domain/provider-polling.js';
import { ExecutionNotOwned, type ActivityOutcome } from './engine/workflow-engine.js';
import { LedgerRefused, LedgerUnavailable, type LedgerGateway } from './ledger-gateway.js';
import {
  NotTransmitted,
  ProviderProtocolError,
  ProviderUnavailable,
  TransmissionAmbiguous,
  type FalQueueClient,
  type SubmittedOperation,
} from './provider/fal-queue-client.js';
import type { ExecutionRow, ProviderAttemptRow } from './store/execution-reads.js';
import type { ExecutionStore } from './store/execution-store.js';

/** Why an execution was parked for a human (also the ledger reconciliation reason). */
export type ReconciliationReason = 'submission_unconfirmed' | 'billing_ambiguous' | 'deadline_expired' | 'receipt_rejected';

export interface ExecutionRunnerOptions {
  readonly store: ExecutionStore;
  readonly provider: FalQueueClient;
  readonly ledger: LedgerGateway;
  readonly artifacts: ArtifactStore;
  readonly now?: () => number;
  /** The absolute deadline of a provider operation, counted from its submission. */
  readonly operationDeadlineMs: number;
  /** How provider polls are spaced (domain/provider-polling.ts; default 100 ms growing to 5 s). */
  readonly polling?: PollingPolicy;
  /** Structured events (no secrets, URLs or paths). */
  readonly log?: (event: Record<string, unknown>) => void;
  /** Development builds' crash points between the durable steps (src/crash-points.ts). */
  readonly crashPoints?: CrashPoints;
}

const later = (delayMs: number): ActivityOutcome => ({ kind: 'later', delayMs });
const next = (phase: ExecutionPhase): ActivityOutcome => ({ kind: 'next', phase });
const done: ActivityOutcome = { kind: 'done' };

/** The frozen snapshot as stored (canonical JSON, amounts as digit strings), parsed back to exact bigints. */
function frozenSnapshot(execution: ExecutionRow): PriceModelSnapshot {
  return priceModelSnapshotSchema.parse(JSON.parse(execution.pricing_snapshot));
}

/** Whether an execution's submission carries the correlation seed (frozen at admission; unknown: it does). */
export const sendsSeed = (execution: Pick<ExecutionRow, 'send_seed'> | undefined): boolean => execution?.send_seed !== 0n;

/** The evidence kept with the park, as stored; null for an execution parked before it was kept (migration 9). */
function parkedEvidence(execution: ExecutionRow): Record<string, unknown> | null {
  if (execution.reconciliation_evidence === null) return null;
  let stored: unknown;
  try {
    stored = JSON.parse(execution.reconciliation_evidence);
  } catch {
    return null;
  }
  const parsed = z.record(z.string(), z.unknown()).safeParse(stored);
  return parsed.success ? parsed.data : null;
}

const isoOf = (ms: bigint) => new Date(Number(ms)).toISOString();

/**
 * When the provider can have received an attempt's submission: from its record (before any byte
 * was sent) to when it stopped being in flight; `until` is null while it still is.
 */
export function submitWindow(attempt: Pick<ProviderAttemptRow, 'created_at' | 'submit_settled_at'>): { from: string; until: string | null } {
  return { from: isoOf(attempt.created_at), until: attempt.submit_settled_at === null ? null : isoOf(attempt.submit_settled_at) };
}

function operationOf(attempt: ProviderAttemptRow): SubmittedOperation {
  return { requestId: attempt.request_id ?? '', operationId: attempt.operation_id ?? '', pollingOrigin: attempt.polling_host ?? '' };
}

/**
 * Runs the phases of an execution (spec §1.4, §3 recovery dispositions; docs/executions.md):
 *   submit_provider          one submission per attempt; the attempt is recorded before any byte
 *                            is sent and checkpointed right after the provider accepts;
 *   poll_provider_operation  polls that same operation until done or its original deadline;
 *   store_artifacts          fetches the images and stores them atomically;
 *   settle                   keeps the precise receipt, then settles it at the ledger.
 * Every step reads the truth from the database first, so running a phase again after a crash
 * never repeats a submission or a financial effect.
 */
export function createExecutionRunner(options: ExecutionRunnerOptions) {
  const { store, provider, ledger, artifacts } = options;
  const now = options.now ?? Date.now;
  const polling = options.polling ?? DEFAULT_POLLING;
  /** The wait before asking about a checkpointed attempt again, bounded by its original deadline. */
  const nextPoll = (attempt: ProviderAttemptRow, hints: { queuePosition?: number | null; retryAfterMs?: number | null } = {}): ActivityOutcome => {
    const at = now();
    const delay = pollDelayMs({ sinceSubmitMs: at - Number(attempt.submit_settled_at ?? attempt.created_at), ...hints }, polling);
    const untilDeadline = attempt.deadline_at === null ? delay : Number(attempt.deadline_at) - at;
    return later(Math.max(0, Math.min(delay, untilDeadline)));
  };
  const log = options.log ?? (() => undefined);
  const crash = options.crashPoints ?? NO_CRASH_POINTS;

  /**
   * Parks the execution (locally first, with its evidence in the same commit, then at the
   * ledger); no new submission, no release.
   */
  async function reconcile(execution: ExecutionRow, reason: ReconciliationReason, evidence: Record<string, unknown>): Promise<ActivityOutcome> {
    store.park(execution.execution_id, reason, evidence);
    log({ event: 'execution_reconciliation', execution_id: execution.execution_id, reason });
    crash.reach('run.after_park');
    return openLedgerRecord(execution, reason, evidence);
  }

  async function openLedgerRecord(execution: ExecutionRow, reason: string, evidence: Record<string, unknown>): Promise<ActivityOutcome> {
    try {
      await ledger.openReconciliation(execution.spend_auth_token_id, execution.execution_id, reason, evidence);
    } catch (error) {
      if (error instanceof LedgerUnavailable) return later(5_000);
      // The ledger refused the record (e.g. the authorization is already final): the local
      // record and its evidence remain for the operator.
      log({ event: 'execution_reconciliation_not_recorded_at_ledger', execution_id: execution.execution_id, status: error instanceof LedgerRefused ? error.status : 'error' });
    }
    // Answered either way: no run is needed for this execution any more.
    store.markLedgerRecordAnswered(execution.execution_id);
    return done;
  }

  /** Another request id a provider answer named: kept in the evidence, as every id received is. */
  function receivedIds(error: unknown): Record<string, unknown> {
    return error instanceof ProviderProtocolError && error.receivedRequestId !== null ? { mismatched_request_id: error.receivedRequestId } : {};
  }

  function evidenceOf(attempt: ProviderAttemptRow | undefined, extra: Record<string, unknown> = {}): Record<string, unknown> {
    return {
      attempt_id: attempt?.attempt_id ?? null,
      provider_request_id: attempt?.request_id ?? null,
      outcome_code: attempt?.outcome_code ?? null,
      // When the submission can have reached the provider: from the attempt's record (before any
      // byte was sent) to its outcome (an answer, or the restart that found it interrupted).
      submit_window: attempt === undefined ? null : submitWindow(attempt),
      // The value the submission carried that the provider keeps and shows (its seed), and
      // whether it carried it at all (a target that takes no seed: `sent` false).
      correlation: attempt === undefined ? null : correlationOf(attempt.execution_id, sendsSeed(store.execution(attempt.execution_id))),
      ...extra,
    };
  }

  async function releaseNotTransmitted(execution: ExecutionRow): Promise<ActivityOutcome> {
    crash.reach('run.before_release');
    try {
      await ledger.release(execution.spend_auth_token_id, execution.execution_id, 'not_transmitted');
    } catch (error) {
      if (error instanceof LedgerUnavailable) return later(5_000);
      throw error;
    }
    crash.reach('run.after_release_answer');
    store.setFinal(execution.execution_id, 'failed', 'not_transmitted');
    log({ event: 'execution_failed', execution_id: execution.execution_id, reason: 'not_transmitted' });
    return done;
  }

  async function submit(execution: ExecutionRow, snapshot: PriceModelSnapshot): Promise<ActivityOutcome> {
    const existing = store.latestAttempt(execution.execution_id);
    if (existing !== undefined) {
      // Never a second submission: decide from what the first one left behind.
      if (existing.state === 'checkpointed') return next('poll_provider_operation');
      if (existing.state === 'not_transmitted') return releaseNotTransmitted(execution);
      if (existing.state === 'submitting') store.setAttemptOutcome(existing.attempt_id, 'ambiguous', 'interrupted_before_checkpoint');
      return reconcile(execution, 'submission_unconfirmed', evidenceOf(store.latestAttempt(execution.execution_id)));
    }
    const attemptId = `att_${randomUUID()}`;
    crash.reach('run.before_attempt');
    store.createAttempt(attemptId, execution.execution_id, 1, snapshot.currency);
    crash.reach('run.after_attempt');
    const request = JSON.parse(execution.request_json) as { input: { prompt: string } };
    // Decided at admission and frozen with the execution: a configuration changed since never
    // changes what this submission sends.
    const correlation = correlationOf(execution.execution_id, sendsSeed(execution));
    let operation: SubmittedOperation;
    try {
      operation = await provider.submit(snapshot.model, {
        prompt: request.input.prompt,
        image_size: snapshot.image_size,
        num_images: snapshot.image_count,
        ...(correlation.sent ? { seed: correlation.value } : {}),
      });
    } catch (error) {
      if (error instanceof NotTransmitted) {
        store.setAttemptOutcome(attemptId, 'not_transmitted', error.detail);
        return releaseNotTransmitted(execution);
      }
      const detail = error instanceof TransmissionAmbiguous ? error.detail : 'unexpected';
      // An id the provider answered with is kept even though the answer was refused: it is how
      // the operator finds the job (and its charge) at the provider.
      if (error instanceof TransmissionAmbiguous && error.receivedRequestId !== null) store.recordReceivedRequestId(attemptId, error.receivedRequestId);
      store.setAttemptOutcome(attemptId, 'ambiguous', detail);
      return reconcile(execution, 'submission_unconfirmed', evidenceOf(store.latestAttempt(execution.execution_id)));
    }
    crash.reach('run.after_submit');
    store.checkpoint(attemptId, { ...operation, deadlineAt: now() + options.operationDeadlineMs });
    log({ event: 'provider_operation_checkpointed', execution_id: execution.execution_id, attempt_id: attemptId });
    crash.reach('run.after_checkpoint');
    return next('poll_provider_operation');
  }

  async function poll(execution: ExecutionRow): Promise<ActivityOutcome> {
    const attempt = store.latestAttempt(execution.execution_id);
    if (attempt?.state !== 'checkpointed') return submit(execution, frozenSnapshot(execution));
    if (now() >= Number(attempt.deadline_at)) {
      // The original deadline is never refreshed, and no replacement operation is ever sent.
      store.setAttemptOutcome(attempt.attempt_id, 'deadline_expired', 'deadline_expired');
      return reconcile(execution, 'deadline_expired', evidenceOf(store.latestAttempt(execution.execution_id)));
    }
    try {
      const status = await provider.status(operationOf(attempt));
      if (status.status !== 'COMPLETED') return nextPoll(attempt, { queuePosition: status.queuePosition });
      if (status.failed) {
        store.setAttemptOutcome(attempt.attempt_id, 'provider_failed', 'completed_with_error');
        return await reconcile(execution, 'billing_ambiguous', evidenceOf(store.latestAttempt(execution.execution_id)));
      }
      return next('store_artifacts');
    } catch (error) {
      if (error instanceof ProviderUnavailable) return nextPoll(attempt, { retryAfterMs: error.retryAfterMs });
      store.setAttemptOutcome(attempt.attempt_id, 'ambiguous', error instanceof ProviderProtocolError ? error.detail : 'unexpected');
      return reconcile(execution, 'billing_ambiguous', evidenceOf(store.latestAttempt(execution.execution_id), receivedIds(error)));
    }
  }

  async function storeArtifacts(execution: ExecutionRow, snapshot: PriceModelSnapshot): Promise<ActivityOutcome> {
    const attempt = store.latestAttempt(execution.execution_id);
    if (attempt?.state !== 'checkpointed') return submit(execution, snapshot);
    try {
      const images = (await provider.result(operationOf(attempt))).slice(0, snapshot.image_count);
      if (images.length === 0) {
        store.setAttemptOutcome(attempt.attempt_id, 'ambiguous', 'no_images');
        return await reconcile(execution, 'billing_ambiguous', evidenceOf(store.latestAttempt(execution.execution_id)));
      }
      const stored = new Set(store.artifacts(execution.execution_id).map((artifact) => Number(artifact.ordinal)));
      for (const [ordinal, image] of images.entries()) {
        if (stored.has(ordinal)) continue;
        const { bytes, mediaType } = await provider.media(image.url);
        const written = await artifacts.write(execution.execution_id, ordinal, mediaType, bytes);
        crash.reach('run.after_artifact_write');
        store.insertArtifact({
          artifact_id: `art_${randomUUID()}`,
          execution_id: execution.execution_id,
          ordinal: BigInt(ordinal),
          media_type: mediaType,
          size_bytes: BigInt(written.sizeBytes),
          sha256: written.sha256,
          storage_key: written.storageKey,
          width: image.width === undefined ? null : BigInt(image.width),
          height: image.height === undefined ? null : BigInt(image.height),
        });
        crash.reach('run.after_artifact_record');
      }
      store.setDelivered(attempt.attempt_id, images.length);
      crash.reach('run.after_delivered');
      return next('settle');
    } catch (error) {
      if (error instanceof ProviderUnavailable) return nextPoll(attempt, { retryAfterMs: error.retryAfterMs });
      store.setAttemptOutcome(attempt.attempt_id, 'ambiguous', error instanceof ProviderProtocolError ? error.detail : 'unexpected');
      return reconcile(execution, 'billing_ambiguous', evidenceOf(store.latestAttempt(execution.execution_id), receivedIds(error)));
    }
  }

  async function settle(execution: ExecutionRow, snapshot: PriceModelSnapshot): Promise<ActivityOutcome> {
    const attempt = store.latestAttempt(execution.execution_id);
    const delivered = Number(attempt?.delivered_images ?? 0);
    if (attempt === undefined || delivered === 0) return storeArtifacts(execution, snapshot);
    const receiptId = `rcpt_${execution.execution_id.slice('exe_'.length)}`;
    const amountUnits = costUnits(snapshot, delivered);
    // Kept before the ledger is asked: a charge made is never forgotten, whatever the ledger says.
    store.insertPreciseReceipt({
      receipt_id: receiptId,
      execution_id: execution.execution_id,
      amount_units: amountUnits,
      currency: snapshot.currency,
      provider_request_id: attempt.request_id ?? receiptId,
      price_model_snapshot: canonicalJson(snapshot),
    }, attempt.attempt_id);
    const kept = store.receipt(execution.execution_id);
    if (kept === undefined) throw new Error('receipt was not kept');
    crash.reach('run.after_receipt');
    try {
      const { settlementId } = await ledger.settle(execution.spend_auth_token_id, execution.execution_id, {
        receipt_id: kept.receipt_id,
        amount_units: String(kept.amount_units),
        units_scale: 6,
        currency: kept.currency,
        provider_request_id: kept.provider_request_id,
        price_model_snapshot: JSON.parse(kept.price_model_snapshot ?? '{}') as unknown,
      });
      crash.reach('run.after_settle_answer');
      store.markReceiptSettled(kept.receipt_id, settlementId);
      crash.reach('run.after_settlement_record');
      store.setAttemptOutcome(attempt.attempt_id, 'completed', null);
      store.setFinal(execution.execution_id, 'succeeded', null);
      log({ event: 'execution_succeeded', execution_id: execution.execution_id });
      crash.reach('run.after_final_state');
      return done;
    } catch (error) {
      if (error instanceof LedgerUnavailable) return later(5_000);
      if (error instanceof LedgerRefused) {
        // E.g. an older ledger that refuses the precise shape: keep the receipt, never retry the
        // provider, never drop precision.
        return reconcile(execution, 'receipt_rejected', evidenceOf(attempt, { receipt_id: kept.receipt_id, ledger_code: error.code }));
      }
      throw error;
    }
  }

  return async function runActivity(executionId: string, phase: ExecutionPhase): Promise<ActivityOutcome> {
    const execution = store.execution(executionId);
    // Another installation's workflow (its worker shares our task queue): never "done", which
    // would close the owner's run with its execution unfinished (docs/executions.md).
    if (execution === undefined) throw new ExecutionNotOwned();
    if (execution.state === 'succeeded' || execution.state === 'failed') return done;
    if (execution.state === 'reconciliation') {
      if (execution.ledger_record_at !== null) return done;
      // Parked before the ledger record was opened (a restart, or a run an operator closed): the
      // evidence kept with the park.
      return openLedgerRecord(execution, execution.state_reason ?? 'billing_ambiguous', parkedEvidence(execution) ?? evidenceOf(store.latestAttempt(executionId)));
    }
    const snapshot = frozenSnapshot(execution);
    store.setRunning(executionId, phase);
    switch (phase) {
      case 'submit_provider':
        return submit(execution, snapshot);
      case 'poll_provider_operation':
        return poll(execution);
      case 'store_artifacts':
        return storeArtifacts(execution, snapshot);
      case 'settle':
        return settle(execution, snapshot);
    }
  };
}
