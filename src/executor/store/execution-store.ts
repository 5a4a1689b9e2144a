import type Database from 'better-sqlite3';
import { canonicalJson } from '../../domain/canonical-json.js';
import type { PriceModelSnapshot } from '../../domain/price-model-snapshot.js';
import { centsCeil } from '../../domain/money.js';
import type { ExecutionPhase, ExecutionState } from '../domain/execution-states.js';

export interface ExecutionRow {
  execution_id: string;
  workflow_id: string;
  spend_auth_token_id: string;
  account_id: string;
  agent_id: string;
  target_id: string;
  request_json: string;
  pricing_snapshot: string;
  authorization_held_cents: bigint;
  authorization_held_units: bigint | null;
  units_scale: bigint | null;
  currency: string;
  state: ExecutionState;
  phase: ExecutionPhase | null;
  state_reason: string | null;
  created_at: bigint;
  updated_at: bigint;
}

export interface AdmissionRow {
  spend_auth_token_id: string;
  route_version: bigint;
  fingerprint: string;
  execution_id: string;
}

export interface ProviderAttemptRow {
  attempt_id: string;
  attempt_number: bigint;
  state: string;
  request_id: string | null;
  operation_id: string | null;
  polling_host: string | null;
  deadline_at: bigint | null;
  exact_amount: bigint | null;
  scale: bigint | null;
  currency: string | null;
  created_at: bigint;
  updated_at: bigint;
}

export interface ReceiptRow {
  receipt_id: string;
  amount_cents: bigint;
  amount_units: bigint | null;
  exact_amount: bigint | null;
  scale: bigint | null;
  currency: string;
  provider_request_id: string | null;
  price_model_snapshot: string | null;
  receipt_shape: string | null;
  ledger_settlement_id: string | null;
  created_at: bigint;
}

export interface ArtifactRow {
  artifact_id: string;
  execution_id: string;
  ordinal: bigint;
  media_type: string;
  size_bytes: bigint;
  sha256: string;
  storage_key: string;
  width: bigint | null;
  height: bigint | null;
  created_at: bigint;
}

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
}

export type ExecutionStore = ReturnType<typeof createExecutionStore>;

/** Typed access to the executor's database. Money columns are bigint; every write is one transaction. */
export function createExecutionStore(db: Database.Database, now: () => number = Date.now) {
  // Prepared once: admission and reads are the executor's hot paths.
  const statements = {
    admissionByToken: db.prepare('SELECT * FROM admission_fingerprints WHERE spend_auth_token_id = ?'),
    executionById: db.prepare('SELECT * FROM executions WHERE execution_id = ?'),
    insertExecution: db.prepare(
      `INSERT INTO executions (execution_id, workflow_id, spend_auth_token_id, account_id, agent_id, target_id, request_json, pricing_snapshot,
         authorization_held_cents, authorization_held_units, units_scale, currency, state, created_at, updated_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 6, ?, 'pending', ?, ?)`,
    ),
    insertAdmission: db.prepare(
      'INSERT INTO admission_fingerprints (spend_auth_token_id, route_version, fingerprint, execution_id, created_at) VALUES (?, ?, ?, ?, ?)',
    ),
    markScheduled: db.prepare("UPDATE executions SET state = 'scheduled', updated_at = ? WHERE execution_id = ? AND state = 'pending'"),
    attempts: db.prepare('SELECT * FROM provider_attempts WHERE execution_id = ? ORDER BY attempt_number'),
    receipt: db.prepare('SELECT * FROM receipts WHERE execution_id = ?'),
    artifacts: db.prepare('SELECT * FROM artifacts WHERE execution_id = ? ORDER BY ordinal'),
    artifact: db.prepare('SELECT * FROM artifacts WHERE execution_id = ? AND artifact_id = ?'),
    insertArtifact: db.prepare(
      `INSERT INTO artifacts (artifact_id, execution_id, ordinal, media_type, size_bytes, sha256, storage_key, width, height, created_at)
       VALUES (@artifact_id, @execution_id, @ordinal, @media_type, @size_bytes, @sha256, @storage_key, @width, @height, @created_at)`,
    ),
  };
  const createPending = db.transaction((execution: NewExecution) => {
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
      at,
      at,
    );
    statements.insertAdmission.run(execution.spendAuthTokenId, execution.routeVersion, execution.fingerprint, execution.executionId, at);
  });

  return {
    admission: (spendAuthTokenId: string) => statements.admissionByToken.get(spendAuthTokenId) as AdmissionRow | undefined,
    execution: (executionId: string) => statements.executionById.get(executionId) as ExecutionRow | undefined,

    /** Durably records a new pending execution and its admission fingerprint, together. */
    createPending(execution: NewExecution): ExecutionRow {
      createPending.immediate(execution);
      return statements.executionById.get(execution.executionId) as ExecutionRow;
    },

    /**
     * pending → scheduled, once the engine has accepted the stable workflow id. This commit does
     * not wait for its own fsync: the next durable commit carries it, and losing it in a crash
     * only leaves the execution pending, which scheduling again at its stable id repairs.
     */
    markScheduled(executionId: string): ExecutionRow {
      db.pragma('synchronous = NORMAL');
      try {
        statements.markScheduled.run(now(), executionId);
      } finally {
        db.pragma('synchronous = FULL');
      }
      return statements.executionById.get(executionId) as ExecutionRow;
    },

    providerAttempts: (executionId: string) => statements.attempts.all(executionId) as ProviderAttemptRow[],
    receipt: (executionId: string) => statements.receipt.get(executionId) as ReceiptRow | undefined,
    artifacts: (executionId: string) => statements.artifacts.all(executionId) as ArtifactRow[],
    artifact: (executionId: string, artifactId: string) => statements.artifact.get(executionId, artifactId) as ArtifactRow | undefined,

    insertArtifact(row: Omit<ArtifactRow, 'created_at'>): void {
      statements.insertArtifact.run({ ...row, created_at: now() });
    },
  };
}
