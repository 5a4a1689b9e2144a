import type Database from 'better-sqlite3';
import { canonicalJson } from '../../domain/canonical-json.js';
import { MAX_AMOUNT_UNITS } from '../../domain/money.js';
import { UserError } from '../../errors.js';
import type { Migration } from '../../storage/open-database.js';

/*
 * The executor's schema history, modelled as it happened (spec §2 "Accounting amounts",
 * "Receipt"; §8 Operations 3-4):
 *   1  the legacy v4.3 shape: whole-cent amounts only;
 *   2  the micro-unit migration (v0.2.4): `*_units` + `units_scale` beside the cent columns,
 *      which stay as conservative projections;
 *   3  the precise-receipt migration: receipts and provider attempts gain an exact integer
 *      amount with its decimal scale; legacy rows convert at scale 2.
 * Each migration runs in one transaction (see openDatabase); 2 and 3 check every row before
 * writing any, and refuse with nothing committed.
 */

/** A migration refused to run; the database is left exactly as it was. */
export class MigrationRefused extends UserError {
  constructor(migration: string, detail: string) {
    super('migration_refused', `The executor database cannot be migrated (${migration}): ${detail}. Nothing was changed.`, {
      nextStep: 'Keep this database and its cold backup; restore the matching pre-upgrade binary or contact support. Do not edit amounts by hand.',
    });
  }
}

const UNITS_PER_CENT = 10_000n;

const legacyShape = `
  CREATE TABLE executions (
    execution_id TEXT PRIMARY KEY,
    workflow_id TEXT NOT NULL UNIQUE,
    spend_auth_token_id TEXT NOT NULL UNIQUE,
    account_id TEXT NOT NULL,
    agent_id TEXT NOT NULL,
    target_id TEXT NOT NULL,
    request_json TEXT NOT NULL,
    pricing_snapshot TEXT NOT NULL,
    authorization_held_cents INTEGER NOT NULL CHECK (authorization_held_cents > 0),
    currency TEXT NOT NULL,
    state TEXT NOT NULL,
    phase TEXT,
    state_reason TEXT,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
  );
  CREATE INDEX executions_by_state ON executions (state, created_at);

  CREATE TABLE admission_fingerprints (
    spend_auth_token_id TEXT PRIMARY KEY,
    route_version INTEGER NOT NULL,
    fingerprint TEXT NOT NULL,
    execution_id TEXT NOT NULL UNIQUE REFERENCES executions (execution_id),
    created_at INTEGER NOT NULL
  );

  CREATE TABLE provider_attempts (
    attempt_id TEXT PRIMARY KEY,
    execution_id TEXT NOT NULL REFERENCES executions (execution_id),
    attempt_number INTEGER NOT NULL,
    state TEXT NOT NULL,
    cost_cents INTEGER CHECK (cost_cents >= 0),
    currency TEXT,
    request_id TEXT,
    operation_id TEXT,
    polling_host TEXT,
    deadline_at INTEGER,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    UNIQUE (execution_id, attempt_number)
  );

  CREATE TABLE receipts (
    receipt_id TEXT PRIMARY KEY,
    execution_id TEXT NOT NULL UNIQUE REFERENCES executions (execution_id),
    amount_cents INTEGER NOT NULL CHECK (amount_cents >= 0),
    currency TEXT NOT NULL,
    ledger_settlement_id TEXT,
    created_at INTEGER NOT NULL
  );

  CREATE TABLE artifacts (
    artifact_id TEXT PRIMARY KEY,
    execution_id TEXT NOT NULL REFERENCES executions (execution_id),
    ordinal INTEGER NOT NULL,
    media_type TEXT NOT NULL,
    size_bytes INTEGER NOT NULL,
    sha256 TEXT NOT NULL,
    storage_key TEXT NOT NULL,
    width INTEGER,
    height INTEGER,
    created_at INTEGER NOT NULL,
    UNIQUE (execution_id, ordinal)
  );
`;

/** cents x 10^4, refused when the result leaves the signed 64-bit range of a SQLite integer. */
function centsToUnits(cents: bigint, where: string): bigint {
  const units = cents * UNITS_PER_CENT;
  if (units > MAX_AMOUNT_UNITS || units < 0n) throw new MigrationRefused('micro-unit migration', `${where} is beyond the micro-unit range`);
  return units;
}

function microUnits(db: Database.Database): void {
  // Check every row first; SQL arithmetic would silently turn an overflow into a float.
  const executions = db.prepare('SELECT execution_id, authorization_held_cents AS cents FROM executions').all() as { execution_id: string; cents: bigint }[];
  const receipts = db.prepare('SELECT receipt_id, amount_cents AS cents FROM receipts').all() as { receipt_id: string; cents: bigint }[];
  const executionUnits = executions.map((row) => [row.execution_id, centsToUnits(row.cents, `execution ${row.execution_id}`)] as const);
  const receiptUnits = receipts.map((row) => [row.receipt_id, centsToUnits(row.cents, `receipt ${row.receipt_id}`)] as const);

  db.exec(`
    ALTER TABLE executions ADD COLUMN authorization_held_units INTEGER CHECK (authorization_held_units > 0);
    ALTER TABLE executions ADD COLUMN units_scale INTEGER CHECK (units_scale = 6);
    ALTER TABLE receipts ADD COLUMN amount_units INTEGER CHECK (amount_units >= 0);
    ALTER TABLE receipts ADD COLUMN units_scale INTEGER CHECK (units_scale = 6);
  `);
  const setExecution = db.prepare('UPDATE executions SET authorization_held_units = ?, units_scale = 6 WHERE execution_id = ?');
  for (const [id, units] of executionUnits) setExecution.run(units, id);
  const setReceipt = db.prepare('UPDATE receipts SET amount_units = ?, units_scale = 6 WHERE receipt_id = ?');
  for (const [id, units] of receiptUnits) setReceipt.run(units, id);
}

/** The reduced provider/model/estimated-price projection of a legacy frozen snapshot. */
function legacyProjection(snapshotJson: string, where: string): string {
  let snapshot: unknown;
  try {
    snapshot = JSON.parse(snapshotJson);
  } catch {
    throw new MigrationRefused('precise-receipt migration', `the pricing snapshot of ${where} is not JSON`);
  }
  const { provider, model, estimated_price_cents: estimate } = (snapshot ?? {}) as Record<string, unknown>;
  const estimateOk = typeof estimate === 'number' ? Number.isSafeInteger(estimate) && estimate >= 0 : typeof estimate === 'string' && /^\d+$/.test(estimate);
  if (typeof provider !== 'string' || typeof model !== 'string' || !estimateOk) {
    throw new MigrationRefused('precise-receipt migration', `the pricing snapshot of ${where} lacks provider, model or estimated_price_cents`);
  }
  return canonicalJson({ provider, model, estimated_price_cents: String(estimate) });
}

function preciseReceipts(db: Database.Database): void {
  db.exec(`
    ALTER TABLE receipts ADD COLUMN exact_amount INTEGER CHECK (exact_amount >= 0);
    ALTER TABLE receipts ADD COLUMN scale INTEGER CHECK (scale BETWEEN 0 AND 6);
    ALTER TABLE receipts ADD COLUMN provider_request_id TEXT;
    ALTER TABLE receipts ADD COLUMN price_model_snapshot TEXT;
    ALTER TABLE receipts ADD COLUMN receipt_shape TEXT CHECK (receipt_shape IN ('precise', 'legacy_migrated'));
    ALTER TABLE provider_attempts ADD COLUMN exact_amount INTEGER CHECK (exact_amount >= 0);
    ALTER TABLE provider_attempts ADD COLUMN scale INTEGER CHECK (scale BETWEEN 0 AND 6);
  `);
  applyPreciseReceiptConversion(db);
}

/**
 * Converts legacy receipts and attempts to exact amounts at scale 2 (the stored whole cents).
 * Only rows without an exact amount are touched: a precise receipt is never rewritten, and
 * running this again changes nothing. Receipt and settlement ids are never changed.
 */
export function applyPreciseReceiptConversion(db: Database.Database): void {
  const legacy = db
    .prepare(
      `SELECT r.receipt_id, r.amount_cents, e.pricing_snapshot FROM receipts r JOIN executions e ON e.execution_id = r.execution_id
       WHERE r.exact_amount IS NULL`,
    )
    .all() as { receipt_id: string; amount_cents: bigint; pricing_snapshot: string }[];
  const converted = legacy.map((row) => ({ id: row.receipt_id, cents: row.amount_cents, projection: legacyProjection(row.pricing_snapshot, `receipt ${row.receipt_id}`) }));
  const setReceipt = db.prepare(
    "UPDATE receipts SET exact_amount = ?, scale = 2, provider_request_id = receipt_id, price_model_snapshot = ?, receipt_shape = 'legacy_migrated' WHERE receipt_id = ? AND exact_amount IS NULL",
  );
  for (const row of converted) setReceipt.run(row.cents, row.projection, row.id);
  db.prepare('UPDATE provider_attempts SET exact_amount = cost_cents, scale = 2 WHERE exact_amount IS NULL AND cost_cents IS NOT NULL').run();
}

/**
 * The embedded workflow engine's runs: one row per stable workflow id. The payload is the
 * execution id and the phase — nothing else (no credentials, bodies, URLs or paths).
 */
const embeddedEngine = `
  CREATE TABLE workflow_runs (
    workflow_id TEXT PRIMARY KEY,
    execution_id TEXT NOT NULL UNIQUE REFERENCES executions (execution_id),
    phase TEXT NOT NULL CHECK (phase IN ('submit_provider', 'poll_provider_operation', 'store_artifacts', 'settle')),
    status TEXT NOT NULL CHECK (status IN ('queued', 'running', 'completed')),
    attempt INTEGER NOT NULL DEFAULT 0,
    available_at INTEGER NOT NULL,
    lease_owner TEXT,
    lease_expires_at INTEGER,
    last_error_code TEXT,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
  );
  CREATE INDEX workflow_runs_due ON workflow_runs (status, available_at);

  CREATE TABLE reconciliation_resolutions (
    execution_id TEXT PRIMARY KEY REFERENCES executions (execution_id),
    resolution TEXT NOT NULL CHECK (resolution IN ('settled', 'released')),
    images_billed INTEGER,
    amount_units INTEGER,
    note TEXT NOT NULL,
    resolved_at INTEGER NOT NULL
  );

  ALTER TABLE executions ADD COLUMN quoted_units INTEGER CHECK (quoted_units >= 0);
  ALTER TABLE executions ADD COLUMN provider_mode TEXT;

  ALTER TABLE provider_attempts ADD COLUMN delivered_images INTEGER CHECK (delivered_images >= 0);
  ALTER TABLE provider_attempts ADD COLUMN outcome_code TEXT;
`;

/**
 * When an attempt's submission stopped being in flight: its acceptance was checkpointed, or its
 * first outcome recorded (an answer refused, a failure, or the restart that found it
 * interrupted). With `created_at` (recorded before any byte is sent) it bounds when the provider
 * can have received the job — the window an operator searches the provider's records in.
 */
const submitWindow = `
  ALTER TABLE provider_attempts ADD COLUMN submit_settled_at INTEGER;
  -- Attempts recorded before this column: their last update bounds the window (wider, never narrower).
  UPDATE provider_attempts SET submit_settled_at = updated_at WHERE state <> 'submitting';
`;

export const EXECUTOR_MIGRATIONS: readonly Migration[] = [
  { version: 1, name: 'legacy_v4_3_whole_cents', up: legacyShape },
  { version: 2, name: 'micro_units', up: microUnits },
  { version: 3, name: 'precise_receipts', up: preciseReceipts },
  { version: 4, name: 'embedded_engine', up: embeddedEngine },
  { version: 5, name: 'submit_window', up: submitWindow },
];
