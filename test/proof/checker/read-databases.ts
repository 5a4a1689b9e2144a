import Database from 'better-sqlite3';
import type { Fail } from './report.ts';
import { checkIntegers } from './rules-amounts.ts';

/*
 * The ledger's and the executor's SQLite files, read read-only with the checker's own SQL (one
 * read transaction per database, so every statement sees one snapshot). Safe integers: every
 * INTEGER cell comes back as a bigint, so no amount ever passes through a float; amount cells
 * are typed `unknown` and used only when they are bigints (values.ts `units`). The schema-level
 * rule (`amounts_are_integers`) runs inside the same transactions.
 */

export interface ExecutionRow {
  execution_id: string;
  token_id: string;
  state: string;
  state_reason: string | null;
  pricing_snapshot: string;
  currency: string;
  held_units: unknown;
  quoted_units: unknown;
}
export interface AttemptRow {
  attempt_id: string;
  execution_id: string;
  state: string;
  request_id: string | null;
  delivered_images: unknown;
  exact_amount: unknown;
  scale: unknown;
}
export interface ReceiptRow {
  receipt_id: string;
  execution_id: string;
  amount_units: unknown;
  exact_amount: unknown;
  scale: unknown;
  currency: string;
  ledger_settlement_id: string | null;
  receipt_shape: string | null;
}
export interface ArtifactRow {
  artifact_id: string;
  execution_id: string;
  ordinal: unknown;
  size_bytes: unknown;
  sha256: string;
  storage_key: string;
}
export interface ResolutionRow {
  execution_id: string;
  resolution: string;
  images_billed: unknown;
  amount_units: unknown;
}
export interface AuthorizationRow {
  token_id: string;
  agent_id: string;
  amount_units: unknown;
  currency: string;
  status: string;
  /** The executor target it was requested for; null when requested without one. */
  target_id: string | null;
  execution_id: string | null;
  /** `policy` when the policy approved it, a credential id when a human decided it, null while undecided. */
  decided_by: string | null;
  decided_at: bigint | null;
  created_at: bigint;
  /** When it became final (settled, released, denied, expired, cancelled). */
  closed_at: bigint | null;
  /** The settlement's amount as the caps and budgets count it (ledger migration 17), null until settled. */
  settled_units: unknown;
}
export interface SettlementRow {
  settlement_id: string;
  token_id: string;
  execution_id: string;
  receipt_id: string;
  receipt_shape: string;
  amount_units: unknown;
  currency: string;
  created_at: bigint;
}
export interface ReleaseRow {
  token_id: string;
  execution_id: string | null;
  reason: string;
  created_at: bigint;
}
export interface RecordRow {
  record_id: string;
  token_id: string;
  execution_id: string;
  status: string;
  resolution: string | null;
  /** `executor` when the executor's settle or release closed it, a credential id when a human resolved it. */
  resolved_by: string | null;
  resolved_at: bigint | null;
  reason: string;
  created_at: bigint;
}

export interface AgentRow {
  agent_id: string;
  status: string;
  created_at: bigint;
  suspended_at: bigint | null;
  suspended_by: string | null;
}

export interface PolicyRow {
  agent_id: string;
  version: bigint;
  updated_at: bigint;
}

export interface CredentialRow {
  credential_id: string;
  created_at: bigint;
}

/** One operator action of the ledger's audit trail; `before`/`after` as stored (JSON text). */
export interface AuditEventRow {
  audit_id: bigint;
  at: bigint;
  actor_credential_id: string | null;
  actor_kind: string;
  action: string;
  agent_id: string | null;
  subject_id: string;
  before: string | null;
  after: string | null;
}

/** One row of the ledger's events outbox; `details` as stored (JSON text). */
export interface LedgerEventRow {
  event_id: bigint;
  at: bigint;
  type: string;
  agent_id: string | null;
  token_id: string | null;
  amount_units: unknown;
  details: string;
}

/** The events outbox and since when the ledger keeps it (its migration's applied_at); null for a ledger from before it. */
export interface EventRows {
  readonly since: bigint;
  readonly events: readonly LedgerEventRow[];
}

/** A webhook sink: when it was added and removed (null: still live). */
export interface WebhookSinkRow {
  sink_id: string;
  created_at: bigint;
  removed_at: bigint | null;
}

/** The installation-wide budget's one row: its version and when it was set. */
export interface InstallationBudgetRow {
  version: bigint;
  updated_at: bigint;
}

/** The audit trail and since when the ledger keeps it (its migration's applied_at); null for a ledger from before it. */
export interface AuditRows {
  readonly since: bigint;
  readonly events: readonly AuditEventRow[];
  /** Since when adding and removing a sink, and changing the installation budget, are their own actions (null: a ledger from before that migration). */
  readonly ownActionsSince: bigint | null;
  /** Every webhook sink (none on a ledger from before them). */
  readonly webhookSinks: readonly WebhookSinkRow[];
  /** The installation budget (null on a ledger from before it). */
  readonly installationBudget: InstallationBudgetRow | null;
}

/**
 * The counts the ledger keeps for its metrics (ledger migration 18) as stored, and every webhook
 * delivery's sink and status (what the delivery counts stand for). Null for a ledger from before them.
 */
export interface LedgerKeptCounts {
  readonly authorizations: readonly { readonly status: string; readonly count: unknown }[];
  readonly settled: readonly { readonly agent_id: string; readonly target_key: string; readonly units: unknown }[];
  readonly deliveries: readonly { readonly sink_id: string; readonly status: string; readonly count: unknown }[];
  readonly deliveryRows: readonly { readonly sink_id: string; readonly status: string }[];
}

export interface LedgerRows {
  readonly agents: readonly AgentRow[];
  readonly authorizations: readonly AuthorizationRow[];
  readonly settlements: readonly SettlementRow[];
  readonly releases: readonly ReleaseRow[];
  readonly records: readonly RecordRow[];
  readonly policies: readonly PolicyRow[];
  readonly credentials: readonly CredentialRow[];
  readonly audit: AuditRows | null;
  readonly outbox: EventRows | null;
  readonly kept: LedgerKeptCounts | null;
}

export interface ExecutorRows {
  readonly executions: readonly ExecutionRow[];
  /** Per execution, in attempt order. */
  readonly attempts: readonly AttemptRow[];
  readonly receipts: readonly ReceiptRow[];
  /** Per execution, in ordinal order. */
  readonly artifacts: readonly ArtifactRow[];
  readonly resolutions: readonly ResolutionRow[];
  /** The ended executions by state as the executor keeps them for its metrics (executor migration 14); null before it, and in rows merged across executors. */
  readonly keptStates: readonly { readonly state: string; readonly count: unknown }[] | null;
}

function open(path: string): Database.Database {
  // readonly: SQLite refuses every write on this connection.
  const db = new Database(path, { readonly: true, fileMustExist: true });
  db.defaultSafeIntegers(true);
  return db;
}

/** One database open read-only for `read`, closed whatever happens. */
function withDatabase<T>(path: string, read: (db: Database.Database) => T): T {
  const db = open(path);
  try {
    return read(db);
  } finally {
    db.close();
  }
}

const all = <T>(db: Database.Database, sql: string) => db.prepare(sql).all() as T[];

/** The name of the ledger migration that began the audit trail (found by name: its number may change when branches merge). */
const AUDIT_MIGRATION = 'operator actions are audited';

/** The migration from which webhook sinks and the installation budget have audit actions of their own (found by name, as the trail's). */
const OWN_ACTIONS_MIGRATION = 'webhook sinks and the installation budget are audited';

const hasTable = (db: Database.Database, table: string) => db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?").get(table) !== undefined;

function readAudit(db: Database.Database): AuditRows | null {
  const appliedAt = (name: string) => db.prepare('SELECT applied_at FROM schema_migrations WHERE name = ?').pluck().get(name) as bigint | undefined;
  const since = appliedAt(AUDIT_MIGRATION);
  if (since === undefined) return null;
  return {
    since,
    events: all<AuditEventRow>(db, 'SELECT audit_id, at, actor_credential_id, actor_kind, action, agent_id, subject_id, before, after FROM audit_events ORDER BY audit_id'),
    ownActionsSince: appliedAt(OWN_ACTIONS_MIGRATION) ?? null,
    webhookSinks: hasTable(db, 'webhook_sinks') ? all<WebhookSinkRow>(db, 'SELECT sink_id, created_at, removed_at FROM webhook_sinks') : [],
    installationBudget: hasTable(db, 'installation_budget') ? (all<InstallationBudgetRow>(db, 'SELECT version, updated_at FROM installation_budget')[0] ?? null) : null,
  };
}

/** The name of the ledger migration that began the events outbox (found by name, as the audit trail's). */
const EVENTS_MIGRATION = 'spend requests name what they pay for; the ledger keeps its events';

function readEvents(db: Database.Database): EventRows | null {
  const since = db.prepare('SELECT applied_at FROM schema_migrations WHERE name = ?').pluck().get(EVENTS_MIGRATION) as bigint | undefined;
  if (since === undefined) return null;
  return { since, events: all<LedgerEventRow>(db, 'SELECT event_id, at, type, agent_id, token_id, amount_units, details FROM events ORDER BY event_id') };
}

function readKeptCounts(db: Database.Database): LedgerKeptCounts | null {
  if (!hasTable(db, 'authorization_counts')) return null;
  return {
    authorizations: all(db, 'SELECT status, count FROM authorization_counts'),
    settled: all(db, 'SELECT agent_id, target_key, units FROM settled_totals'),
    deliveries: all(db, 'SELECT sink_id, status, count FROM webhook_delivery_counts'),
    deliveryRows: all(db, 'SELECT sink_id, status FROM webhook_deliveries'),
  };
}

/** The ledger's rows, read in one transaction; `amounts_are_integers` reports through `fail`. */
export function readLedger(path: string, fail: Fail): LedgerRows {
  return withDatabase(path, (ledgerDb) =>
    ledgerDb.transaction((): LedgerRows => {
      checkIntegers('ledger', ledgerDb, fail);
      return {
        agents: all<AgentRow>(ledgerDb, 'SELECT agent_id, status, created_at, suspended_at, suspended_by FROM agents'),
        authorizations: all<AuthorizationRow>(ledgerDb, 'SELECT token_id, agent_id, amount_units, currency, status, target_id, execution_id, decided_by, decided_at, created_at, closed_at, settled_units FROM authorizations'),
        settlements: all<SettlementRow>(ledgerDb, 'SELECT settlement_id, token_id, execution_id, receipt_id, receipt_shape, amount_units, currency, created_at FROM settlements'),
        releases: all<ReleaseRow>(ledgerDb, 'SELECT token_id, execution_id, reason, created_at FROM releases'),
        records: all<RecordRow>(ledgerDb, 'SELECT record_id, token_id, execution_id, status, resolution, resolved_by, resolved_at, reason, created_at FROM reconciliation_records'),
        policies: all<PolicyRow>(ledgerDb, 'SELECT agent_id, version, updated_at FROM policies'),
        credentials: all<CredentialRow>(ledgerDb, 'SELECT credential_id, created_at FROM credentials'),
        audit: readAudit(ledgerDb),
        outbox: readEvents(ledgerDb),
        kept: readKeptCounts(ledgerDb),
      };
    })(),
  );
}

/** One executor's rows, read in one transaction; `amounts_are_integers` reports through `fail`. */
export function readExecutor(path: string, fail: Fail): ExecutorRows {
  return withDatabase(path, (executorDb) =>
    executorDb.transaction((): ExecutorRows => {
      checkIntegers('executor', executorDb, fail);
      return {
        executions: all<ExecutionRow>(
          executorDb,
          'SELECT execution_id, spend_auth_token_id AS token_id, state, state_reason, pricing_snapshot, currency, authorization_held_units AS held_units, quoted_units FROM executions',
        ),
        attempts: all<AttemptRow>(executorDb, 'SELECT attempt_id, execution_id, state, request_id, delivered_images, exact_amount, scale FROM provider_attempts ORDER BY execution_id, attempt_number'),
        receipts: all<ReceiptRow>(executorDb, 'SELECT receipt_id, execution_id, amount_units, exact_amount, scale, currency, ledger_settlement_id, receipt_shape FROM receipts'),
        artifacts: all<ArtifactRow>(executorDb, 'SELECT artifact_id, execution_id, ordinal, size_bytes, sha256, storage_key FROM artifacts ORDER BY execution_id, ordinal'),
        resolutions: all<ResolutionRow>(executorDb, 'SELECT execution_id, resolution, images_billed, amount_units FROM reconciliation_resolutions'),
        keptStates: hasTable(executorDb, 'execution_counts') ? all(executorDb, 'SELECT state, count FROM execution_counts') : null,
      };
    })(),
  );
}

/** Several executors' rows as one (executions of one ledger: their ids never repeat across executors). */
export function mergeExecutors(rows: readonly ExecutorRows[]): ExecutorRows {
  return {
    executions: rows.flatMap((row) => row.executions),
    attempts: rows.flatMap((row) => row.attempts),
    receipts: rows.flatMap((row) => row.receipts),
    artifacts: rows.flatMap((row) => row.artifacts),
    resolutions: rows.flatMap((row) => row.resolutions),
    // Each executor keeps its own counts: checked per executor on its own rows (check-invariants.ts), never merged.
    keptStates: null,
  };
}
