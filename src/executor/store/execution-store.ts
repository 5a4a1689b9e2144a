import type Database from 'better-sqlite3';
import { canonicalJson } from '../../domain/canonical-json.js';
import type { PriceModelSnapshot } from '../../domain/price-model-snapshot.js';
import { centsCeil } from '../../domain/money.js';
import type { ExecutionPhase } from '../domain/execution-states.js';
import { createGroupCommit } from '../../storage/group-commit.js';
import { withoutOwnFsync } from '../../storage/open-database.js';
import { createExecutionReads, type ArtifactRow, type ExecutionRow } from './execution-reads.js';

export interface NewExecution {
  readonly executionId: string;
  readonly workflowId: string;
  readonly spendAuthTokenId: string;
  readonly accountId: string;
  readonly agentId: string;
  readonly targetId: string;
  readonly request: unknown;
  readonly fingerprint: string;
  readonly routeVersion: number;
  readonly snapshot: PriceModelSnapshot;
  readonly heldUnits: bigint;
  readonly currency: string;
  /** The exact cost of the request as asked, at admission. */
  readonly quotedUnits: bigint;
  /** sandbox or live: live spend counts against the spend ceiling. */
  readonly providerMode: string;
  /** Whether its submission carries the correlation seed (the target's `send_seed`, frozen here). */
  readonly sendSeed: boolean;
}

export type ExecutionStore = ReturnType<typeof createExecutionStore>;

/** Typed access to the executor's database. Money columns are bigint; every write is one transaction. */
/**
 * The executor's store: its reads (execution-reads.ts) and its writes. `onChange` hears of every write that can change an execution's state or
 * phase (execution-changes.ts), after it is made (inside a caller's transaction: before its
 * commit, which finishes before any waiter runs).
 */
export function createExecutionStore(db: Database.Database, now: () => number = Date.now, onChange: (executionId: string) => void = () => undefined) {
  const reads = createExecutionReads(db);
  // Prepared once, as the reads are.
  const statements = {
    insertExecution: db.prepare(
      `INSERT INTO executions (execution_id, workflow_id, spend_auth_token_id, account_id, agent_id, target_id, request_json, pricing_snapshot,
         authorization_held_cents, authorization_held_units, units_scale, currency, state, quoted_units, provider_mode, send_seed, created_at, updated_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 6, ?, 'pending', ?, ?, ?, ?, ?)`,
    ),
    insertAdmission: db.prepare(
      'INSERT INTO admission_fingerprints (spend_auth_token_id, route_version, fingerprint, execution_id, created_at) VALUES (?, ?, ?, ?, ?)',
    ),
    markScheduled: db.prepare("UPDATE executions SET state = 'scheduled', updated_at = ? WHERE execution_id = ? AND state = 'pending'"),
    setRunning: db.prepare("UPDATE executions SET state = 'running', phase = ?, updated_at = ? WHERE execution_id = ? AND state IN ('pending', 'scheduled', 'running')"),
    setFinal: db.prepare("UPDATE executions SET state = ?, phase = NULL, state_reason = ?, updated_at = ? WHERE execution_id = ? AND state NOT IN ('succeeded', 'failed')"),
    // One statement: the state and its evidence commit together. The first evidence is kept.
    park: db.prepare(
      `UPDATE executions SET state = 'reconciliation', phase = NULL, state_reason = @reason, updated_at = @at,
         reconciliation_evidence = COALESCE(reconciliation_evidence, @evidence)
       WHERE execution_id = @execution_id AND state NOT IN ('succeeded', 'failed')`,
    ),
    insertAttempt: db.prepare(
      "INSERT INTO provider_attempts (attempt_id, execution_id, attempt_number, state, currency, created_at, updated_at) VALUES (?, ?, ?, 'submitting', ?, ?, ?)",
    ),
    checkpoint: db.prepare(
      "UPDATE provider_attempts SET state = 'checkpointed', request_id = @request_id, operation_id = @operation_id, polling_host = @polling_host, deadline_at = @deadline_at, updated_at = @at, submit_settled_at = @at WHERE attempt_id = @attempt_id AND state = 'submitting'",
    ),
    // The first outcome of a submission still in flight also closes its submit window.
    attemptOutcome: db.prepare(
      "UPDATE provider_attempts SET submit_settled_at = CASE WHEN state = 'submitting' THEN @at ELSE submit_settled_at END, state = @state, outcome_code = @outcome_code, updated_at = @at WHERE attempt_id = @attempt_id",
    ),
    receivedRequestId: db.prepare('UPDATE provider_attempts SET request_id = ? WHERE attempt_id = ? AND request_id IS NULL'),
    delivered: db.prepare('UPDATE provider_attempts SET delivered_images = ?, updated_at = ? WHERE attempt_id = ?'),
    attemptAmount: db.prepare('UPDATE provider_attempts SET exact_amount = ?, scale = 6, currency = ?, updated_at = ? WHERE attempt_id = ?'),
    insertReceipt: db.prepare(
      `INSERT INTO receipts (receipt_id, execution_id, amount_cents, amount_units, units_scale, exact_amount, scale, currency, provider_request_id,
         price_model_snapshot, receipt_shape, created_at)
       VALUES (@receipt_id, @execution_id, @amount_cents, @amount_units, 6, @amount_units, 6, @currency, @provider_request_id, @price_model_snapshot, 'precise', @created_at)
       ON CONFLICT (receipt_id) DO NOTHING`,
    ),
    settled: db.prepare('UPDATE receipts SET ledger_settlement_id = ? WHERE receipt_id = ? AND ledger_settlement_id IS NULL'),
    insertResolution: db.prepare(
      'INSERT INTO reconciliation_resolutions (execution_id, resolution, images_billed, amount_units, note, resolved_at) VALUES (?, ?, ?, ?, ?, ?)',
    ),
    ledgerRecordAnswered: db.prepare("UPDATE executions SET ledger_record_at = ? WHERE execution_id = ? AND ledger_record_at IS NULL"),
    insertArtifact: db.prepare(
      `INSERT INTO artifacts (artifact_id, execution_id, ordinal, media_type, size_bytes, sha256, storage_key, width, height, created_at)
       VALUES (@artifact_id, @execution_id, @ordinal, @media_type, @size_bytes, @sha256, @storage_key, @width, @height, @created_at)
       ON CONFLICT (execution_id, ordinal) DO NOTHING`,
    ),
  };
  const createPending = createGroupCommit(db, (execution: NewExecution) => {
    const at = now();
    statements.insertExecution.run(
      execution.executionId,
      execution.workflowId,
      execution.spendAuthTokenId,
      execution.accountId,
      execution.agentId,
      execution.targetId,
      canonicalJson(execution.request),
      canonicalJson(execution.snapshot),
      centsCeil(execution.heldUnits),
      execution.heldUnits,
      execution.currency,
      execution.quotedUnits,
      execution.providerMode,
      execution.sendSeed ? 1 : 0,
      at,
      at,
    );
    statements.insertAdmission.run(execution.spendAuthTokenId, execution.routeVersion, execution.fingerprint, execution.executionId, at);
    return reads.execution(execution.executionId) as ExecutionRow;
  });

  return {
    ...reads,

    /**
     * Durably records a new pending execution and its admission fingerprint, together; settles
     * once they are committed. Admissions asked for in the same turn of the event loop share
     * one commit (group commit: one fsync for all of them).
     */
    createPending,

    /**
     * pending → scheduled, once the engine has accepted the stable workflow id (unless the
     * engine recorded it already). This commit does not wait for its own fsync: the next durable
     * commit carries it, and losing it in a power failure only leaves the execution pending,
     * which restart recovery schedules again at its stable id.
     */
    markScheduled(executionId: string): ExecutionRow {
      const execution = reads.execution(executionId) as ExecutionRow;
      if (execution.state !== 'pending') return execution;
      withoutOwnFsync(db, () => statements.markScheduled.run(now(), executionId));
      onChange(executionId);
      return reads.execution(executionId) as ExecutionRow;
    },

    /**
     * pending → scheduled inside the caller's transaction: for an engine on this database that
     * creates its run and records the hand-off in one commit.
     */
    recordScheduled(executionId: string): void {
      statements.markScheduled.run(now(), executionId);
      onChange(executionId);
    },

    /** scheduled/running → running in `phase`. */
    setRunning(executionId: string, phase: ExecutionPhase): void {
      if (statements.setRunning.run(phase, now(), executionId).changes > 0) onChange(executionId);
    },

    /** → succeeded | failed | reconciliation, with a reason code. A terminal state never changes. */
    setFinal(executionId: string, state: 'succeeded' | 'failed' | 'reconciliation', reason: string | null): void {
      if (statements.setFinal.run(state, reason, now(), executionId).changes > 0) onChange(executionId);
    },

    /**
     * → reconciliation with its reason and the evidence its ledger record is opened with, in one
     * commit (the evidence is what a restart reopens the record with). A terminal state never changes.
     */
    park(executionId: string, reason: string, evidence: Record<string, unknown>): void {
      if (statements.park.run({ reason, at: now(), evidence: canonicalJson(evidence), execution_id: executionId }).changes > 0) onChange(executionId);
    },

    /** Durably records that a submission is about to be sent — before a single byte leaves. */
    createAttempt(attemptId: string, executionId: string, attemptNumber: number, currency: string): void {
      const at = now();
      statements.insertAttempt.run(attemptId, executionId, attemptNumber, currency, at, at);
    },

    /** The checkpoint after a successful submit: request id, operation id, polling origin, original deadline. */
    checkpoint(attemptId: string, checkpoint: { requestId: string; operationId: string; pollingOrigin: string; deadlineAt: number }): void {
      statements.checkpoint.run({
        request_id: checkpoint.requestId,
        operation_id: checkpoint.operationId,
        polling_host: checkpoint.pollingOrigin,
        deadline_at: checkpoint.deadlineAt,
        at: now(),
        attempt_id: attemptId,
      });
    },

    setAttemptOutcome(attemptId: string, state: string, outcomeCode: string | null): void {
      statements.attemptOutcome.run({ state, outcome_code: outcomeCode, at: now(), attempt_id: attemptId });
    },

    /** A request id the provider answered with although its answer was refused (never overwrites one). */
    recordReceivedRequestId(attemptId: string, requestId: string): void {
      statements.receivedRequestId.run(requestId, attemptId);
    },

    setDelivered(attemptId: string, images: number): void {
      statements.delivered.run(images, now(), attemptId);
    },

    /**
     * Keeps the precise receipt before the ledger is asked, and records the same exact amount,
     * scale (6) and currency on the provider attempt it bills (spec §2 "Provider attempt"), in one
     * transaction; a second call changes nothing.
     */
    insertPreciseReceipt(
      receipt: {
        receipt_id: string;
        execution_id: string;
        amount_units: bigint;
        currency: string;
        provider_request_id: string;
        price_model_snapshot: string;
      },
      attemptId: string | null,
    ): void {
      db.transaction(() => {
        const at = now();
        statements.insertReceipt.run({ ...receipt, amount_cents: centsCeil(receipt.amount_units), created_at: at });
        if (attemptId !== null) statements.attemptAmount.run(receipt.amount_units, receipt.currency, at, attemptId);
      }).immediate();
    },

    markReceiptSettled(receiptId: string, settlementId: string): void {
      statements.settled.run(settlementId, receiptId);
    },

    /** Records a human's resolution and moves the execution to its final state, together. */
    recordResolution(executionId: string, resolution: { kind: 'settled' | 'released'; imagesBilled: number | null; amountUnits: bigint | null; note: string }): void {
      db.transaction(() => {
        const at = now();
        statements.insertResolution.run(executionId, resolution.kind, resolution.imagesBilled, resolution.amountUnits, resolution.note, at);
        statements.setFinal.run(
          resolution.kind === 'settled' ? 'succeeded' : 'failed',
          resolution.kind === 'settled' ? 'reconciled_settled' : 'reconciled_no_charge',
          at,
          executionId,
        );
      }).immediate();
      onChange(executionId);
    },

    /** The ledger answered the parked execution's reconciliation record (opened it, or refused it as final). */
    markLedgerRecordAnswered(executionId: string): void {
      statements.ledgerRecordAnswered.run(now(), executionId);
    },

    insertArtifact(row: Omit<ArtifactRow, 'created_at'>): void {
      statements.insertArtifact.run({ ...row, created_at: now() });
    },
  };
}
