import type Database from 'better-sqlite3';
import type { ExecutionPhase, ExecutionState } from '../domain/execution-states.js';

/*
 * The executor database's rows and the store's read queries (execution-store.ts composes them
 * with its writes into the one ExecutionStore). Reads never change a row.
 */

/** The largest integer SQLite stores: above every `created_at`. */
const MAX_SQLITE_INTEGER = 9_223_372_036_854_775_807n;

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
  /** 1: its submission carries the correlation seed; 0: its target takes none (frozen at admission). */
  send_seed: bigint;
  /** The evidence it was parked with (canonical JSON; migration 9); null unless parked since. */
  reconciliation_evidence: string | null;
  /** When the ledger answered its reconciliation record (migration 10); null while it has not. */
  ledger_record_at: bigint | null;
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
  execution_id: string;
  delivered_images: bigint | null;
  outcome_code: string | null;
  attempt_number: bigint;
  state: string;
  request_id: string | null;
  operation_id: string | null;
  polling_host: string | null;
  deadline_at: bigint | null;
  /** When the submission stopped being in flight (checkpoint or first outcome); null while submitting. */
  submit_settled_at: bigint | null;
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

const byNumber = <K extends string>(key: K) => (a: Record<K, bigint>, b: Record<K, bigint>) => (a[key] < b[key] ? -1 : a[key] > b[key] ? 1 : 0);
const byAttemptNumber = byNumber('attempt_number');
const byOrdinal = byNumber('ordinal');

/** The store's reads, each statement prepared once: admission and reads are the executor's hot paths. */
export function createExecutionReads(db: Database.Database) {
  const statements = {
    admissionByToken: db.prepare('SELECT * FROM admission_fingerprints WHERE spend_auth_token_id = ?'),
    executionById: db.prepare('SELECT * FROM executions WHERE execution_id = ?'),
    // Sorted in JavaScript rather than by ORDER BY: with a bound execution id the ORDER BY form
    // costs 15-20 µs per call against 3 µs without it (measured, bundled SQLite 3.54; with the id
    // as a literal it is fast too, so the statement is likely re-planned for every new binding),
    // and these run for every execution detail.
    attempts: db.prepare('SELECT * FROM provider_attempts WHERE execution_id = ?'),
    receipt: db.prepare('SELECT * FROM receipts WHERE execution_id = ?'),
    artifacts: db.prepare('SELECT * FROM artifacts WHERE execution_id = ?'),
    artifactTally: db.prepare('SELECT COUNT(*) AS count, MAX(created_at) AS last_at FROM artifacts WHERE execution_id = ?'),
    artifact: db.prepare('SELECT * FROM artifacts WHERE execution_id = ? AND artifact_id = ?'),
    latestAttempt: db.prepare('SELECT * FROM provider_attempts WHERE execution_id = ? ORDER BY attempt_number DESC LIMIT 1'),
    liveCommitted: db.prepare("SELECT COALESCE(SUM(quoted_units), 0) AS units FROM executions WHERE provider_mode = 'live' AND state <> 'failed'"),
    underReconciliation: db.prepare("SELECT * FROM executions WHERE state = 'reconciliation' ORDER BY created_at"),
    resolution: db.prepare('SELECT * FROM reconciliation_resolutions WHERE execution_id = ?'),
    nonTerminal: db.prepare("SELECT execution_id, workflow_id, state FROM executions WHERE state IN ('pending', 'scheduled', 'running') ORDER BY created_at"),
    awaitingLedgerRecord: db.prepare("SELECT execution_id, workflow_id, state FROM executions WHERE state = 'reconciliation' AND ledger_record_at IS NULL ORDER BY created_at"),
    // The list (GET /v1/executions): newest first, keyset-paged on (created_at, execution_id) so a
    // page never repeats or skips a row while new executions arrive. One statement per shape, so
    // each reads its index in order (executions_newest, executions_by_state_newest) with no sort;
    // a first page starts after the largest key there can be.
    newest: db.prepare(
      `SELECT * FROM executions WHERE (created_at, execution_id) < (@before_at, @before_id)
       ORDER BY created_at DESC, execution_id DESC LIMIT @limit`,
    ),
    newestInState: db.prepare(
      `SELECT * FROM executions WHERE state = @state AND (created_at, execution_id) < (@before_at, @before_id)
       ORDER BY created_at DESC, execution_id DESC LIMIT @limit`,
    ),
  };

  return {
    admission: (spendAuthTokenId: string) => statements.admissionByToken.get(spendAuthTokenId) as AdmissionRow | undefined,
    execution: (executionId: string) => statements.executionById.get(executionId) as ExecutionRow | undefined,
    /** In attempt order. */
    providerAttempts: (executionId: string) => (statements.attempts.all(executionId) as ProviderAttemptRow[]).sort(byAttemptNumber),
    receipt: (executionId: string) => statements.receipt.get(executionId) as ReceiptRow | undefined,
    /** In ordinal order. */
    artifacts: (executionId: string) => (statements.artifacts.all(executionId) as ArtifactRow[]).sort(byOrdinal),
    /** How many artifacts an execution has stored, and when the last one was (null: none yet). */
    artifactTally(executionId: string): { count: number; lastAt: bigint | null } {
      const row = statements.artifactTally.get(executionId) as { count: bigint; last_at: bigint | null };
      return { count: Number(row.count), lastAt: row.last_at };
    },
    artifact: (executionId: string, artifactId: string) => statements.artifact.get(executionId, artifactId) as ArtifactRow | undefined,
    latestAttempt: (executionId: string) => statements.latestAttempt.get(executionId) as ProviderAttemptRow | undefined,
    underReconciliation: () => statements.underReconciliation.all() as ExecutionRow[],
    /** Live spend committed so far: the quoted cost of every live execution that has not failed. */
    liveCommittedUnits: () => (statements.liveCommitted.get() as { units: bigint }).units,
    resolution: (executionId: string) =>
      statements.resolution.get(executionId) as
        | { resolution: 'settled' | 'released'; images_billed: bigint | null; amount_units: bigint | null; note: string; resolved_at: bigint }
        | undefined,
    /**
     * Up to `limit` executions, newest first, optionally in one state and older than the
     * execution `before` (the last row of the previous page; the route refuses an unknown one).
     */
    newestExecutions(filter: { state: ExecutionState | null; limit: number; before: ExecutionRow | null }): ExecutionRow[] {
      const page = {
        before_at: filter.before?.created_at ?? MAX_SQLITE_INTEGER,
        // Above every execution id (`exe_` and hex digits): a first page starts at the newest.
        before_id: filter.before?.execution_id ?? '~',
        limit: filter.limit,
      };
      const rows = filter.state === null ? statements.newest.all(page) : statements.newestInState.all({ ...page, state: filter.state });
      return rows as ExecutionRow[];
    },
    nonTerminal: () => statements.nonTerminal.all() as { execution_id: string; workflow_id: string; state: ExecutionState }[],
    /** Parked executions whose reconciliation record the ledger has not answered yet: they still need a run. */
    awaitingLedgerRecord: () => statements.awaitingLedgerRecord.all() as { execution_id: string; workflow_id: string; state: ExecutionState }[],
  };
}
