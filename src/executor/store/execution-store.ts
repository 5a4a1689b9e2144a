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
  const admissionByToken = db.prepare('SELECT * FROM admission_fingerprints WHERE spend_auth_token_id = ?');
  const executionById = db.prepare('SELECT * FROM executions WHERE execution_id = ?');

  return {
    admission: (spendAuthTokenId: string) => admissionByToken.get(spendAuthTokenId) as AdmissionRow | undefined,
    execution: (executionId: string) => executionById.get(executionId) as ExecutionRow | undefined,

    /** Durably records a new pending execution and its admission fingerprint, together. */
    createPending(execution: NewExecution): ExecutionRow {
      db.transaction(() => {
        const at = now();
        db.prepare(
          `INSERT INTO executions (execution_id, workflow_id, spend_auth_token_id, account_id, agent_id, target_id, request_json, pricing_snapshot,
             authorization_held_cents, authorization_held_units, units_scale, currency, state, created_at, updated_at)
           VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 6, ?, 'pending', ?, ?)`,
        ).run(
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
        db.prepare('INSERT INTO admission_fingerprints (spend_auth_token_id, route_version, fingerprint, execution_id, created_at) VALUES (?, ?, ?, ?, ?)').run(
          execution.spendAuthTokenId,
          execution.routeVersion,
          execution.fingerprint,
          execution.executionId,
          at,
        );
      }).immediate();
      return executionById.get(execution.executionId) as ExecutionRow;
    },

    /** pending → scheduled, once the engine has accepted the stable workflow id. */
    markScheduled(executionId: string): ExecutionRow {
      db.prepare("UPDATE executions SET state = 'scheduled', updated_at = ? WHERE execution_id = ? AND state = 'pending'").run(now(), executionId);
      return executionById.get(executionId) as ExecutionRow;
    },

    providerAttempts: (executionId: string) =>
      db.prepare('SELECT * FROM provider_attempts WHERE execution_id = ? ORDER BY attempt_number').all(executionId) as ProviderAttemptRow[],
    receipt: (executionId: string) => db.prepare('SELECT * FROM receipts WHERE execution_id = ?').get(executionId) as ReceiptRow | undefined,
    artifacts: (executionId: string) => db.prepare('SELECT * FROM artifacts WHERE execution_id = ? ORDER BY ordinal').all(executionId) as ArtifactRow[],
    artifact: (executionId: string, artifactId: string) =>
      db.prepare('SELECT * FROM artifacts WHERE execution_id = ? AND artifact_id = ?').get(executionId, artifactId) as ArtifactRow | undefined,

    insertArtifact(row: Omit<ArtifactRow, 'created_at'>): void {
      db.prepare(
        `INSERT INTO artifacts (artifact_id, execution_id, ordinal, media_type, size_bytes, sha256, storage_key, width, height, created_at)
         VALUES (@artifact_id, @execution_id, @ordinal, @media_type, @size_bytes, @sha256, @storage_key, @width, @height, @created_at)`,
      ).run({ ...row, created_at: now() });
    },
  };
}
