import type Database from 'better-sqlite3';
import { canonicalJson } from '../../../domain/canonical-json.js';
import { MAX_AMOUNT_UNITS } from '../../../domain/money.js';
import { UserError } from '../../../errors.js';

/*
 * The executor's schema history, modelled as it happened (spec §2 "Accounting amounts",
 * "Receipt"; §8 Operations 3-4):
 *   1  the legacy v4.3 shape: whole-cent amounts only;
 *   2  the micro-unit migration (v0.2.4): `*_units` + `units_scale` beside the cent columns,
 *      which stay as conservative projections;
 *   3  the precise-receipt migration: receipts and provider attempts gain an exact integer
 *      amount with its decimal scale; legacy rows convert at scale 2.
 * The pending migrations run together in one transaction (see migrate); 2 and 3 check every
 * legacy amount they read before writing anything, and a refusal leaves the file as it was.
 */

/** A migration refused to run; the database is left exactly as it was. */
export class MigrationRefused extends UserError {
  constructor(migration: string, detail: string) {
    super('migration_refused', `The executor database cannot be migrated (${migration}): ${detail}. Its content was not changed.`, {
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

/**
 * Creates the v4.3 schema in a new database. A file that already holds tables but records no
 * schema version was not written by lexec (v4.3 recorded version 1 in `schema_migrations` too):
 * refused, rather than failing on the first CREATE TABLE as an internal error.
 */
export function legacySchema(db: Database.Database): void {
  const tables = db.prepare("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name <> 'schema_migrations'").pluck().safeIntegers(true).get() as bigint;
  if (tables > 0n) throw new MigrationRefused('legacy schema', 'the database holds tables but records no schema version, so it is not an executor database lexec wrote');
  db.exec(legacyShape);
}

/** A legacy whole-cent column a migration reads, with the key that names its rows. */
interface LegacyAmountColumn {
  readonly table: string;
  readonly column: string;
  readonly key: string;
  /** The smallest amount the column's constraint allows (an execution holds at least one cent). */
  readonly minimum: 0n | 1n;
  /** Whether a row may have no amount (an attempt without a cost). */
  readonly nullable: boolean;
}

const HELD = { table: 'executions', column: 'authorization_held_cents', key: 'execution_id', minimum: 1n, nullable: false } as const satisfies LegacyAmountColumn;
const RECEIPT = { table: 'receipts', column: 'amount_cents', key: 'receipt_id', minimum: 0n, nullable: false } as const satisfies LegacyAmountColumn;
const ATTEMPT_COST = { table: 'provider_attempts', column: 'cost_cents', key: 'attempt_id', minimum: 0n, nullable: true } as const satisfies LegacyAmountColumn;

interface LegacyAmount {
  /** The row's key as stored. */
  readonly id: unknown;
  /** `<table>.<column> of <key> <id>`, for a refusal. */
  readonly where: string;
  readonly cents: bigint;
}

/**
 * Every amount of a legacy column in whole cents (a row without one, where the column allows
 * that, has nothing to convert and is left out) — or a refusal naming the table, the column and
 * the row's key (never the value). SQLite keeps what was written whatever the declared type: a
 * column declared INTEGER still holds a REAL 12.5, a TEXT or a BLOB, and a constraint can have
 * been bypassed. Only the storage class `integer` is a whole number of cents (SQLite itself
 * stores 12.0 written to an INTEGER column as the integer 12, so a REAL left there is fractional
 * or beyond 64 bits); the amount must also meet the column's own constraint, which the new
 * columns repeat.
 */
function legacyAmounts(db: Database.Database, migration: string, spec: LegacyAmountColumn): LegacyAmount[] {
  const { table, column, key } = spec;
  const rows = db
    .prepare(`SELECT ${key} AS id, typeof(${column}) AS storage, ${column} AS cents FROM ${table} ORDER BY ${key}`)
    .safeIntegers(true)
    .all() as { id: unknown; storage: string; cents: unknown }[];
  return rows.flatMap((row) => {
    const where = `${table}.${column} of ${key} ${String(row.id)}`;
    if (row.storage === 'null' && spec.nullable) return [];
    if (row.storage !== 'integer' || typeof row.cents !== 'bigint') {
      throw new MigrationRefused(migration, `${where} is stored as ${row.storage}, not as a whole number of cents`);
    }
    if (row.cents < spec.minimum) throw new MigrationRefused(migration, `${where} is ${spec.minimum === 1n ? 'not positive' : 'negative'}`);
    return [{ id: row.id, where, cents: row.cents }];
  });
}

/** cents x 10^4, refused when the result leaves the signed 64-bit range of a SQLite integer. */
function centsToUnits(cents: bigint, where: string): bigint {
  const units = cents * UNITS_PER_CENT;
  if (units > MAX_AMOUNT_UNITS) throw new MigrationRefused('micro-unit migration', `${where} is beyond the micro-unit range`);
  return units;
}

export function microUnits(db: Database.Database): void {
  // Check every row first; SQL arithmetic would silently turn an overflow into a float.
  const toUnits = ({ id, where, cents }: LegacyAmount) => [id, centsToUnits(cents, where)] as const;
  const executionUnits = legacyAmounts(db, 'micro-unit migration', HELD).map(toUnits);
  const receiptUnits = legacyAmounts(db, 'micro-unit migration', RECEIPT).map(toUnits);

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

export function preciseReceipts(db: Database.Database): void {
  // The legacy amounts this migration copies, checked before the first write.
  legacyAmounts(db, 'precise-receipt migration', RECEIPT);
  legacyAmounts(db, 'precise-receipt migration', ATTEMPT_COST);
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

