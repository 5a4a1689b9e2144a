import Database from 'better-sqlite3';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { applyPreciseReceiptConversion, EXECUTOR_MIGRATIONS } from '../../src/executor/store/migrations.js';
import { migrate, openDatabase } from '../../src/storage/open-database.js';
import { makeTempDir, removeDir } from '../support/cli.js';

let dir: string;
let path: string;

beforeEach(async () => {
  dir = await makeTempDir('lexec-migrations-');
  path = join(dir, 'executor.db');
});

afterEach(async () => {
  await removeDir(dir);
});

/** A database built by an older binary: only the first `version` migrations, then legacy rows. */
function fixtureAt(version: number, fill: (db: Database.Database) => void): void {
  const db = new Database(path);
  db.defaultSafeIntegers(true);
  migrate(db, EXECUTOR_MIGRATIONS.slice(0, version));
  fill(db);
  db.close();
}

const legacySnapshot = JSON.stringify({ provider: 'fal', model: 'fal-ai/flux/schnell', image_size: 'square_hd', image_count: 2, estimated_price_cents: 1 });

function legacyExecution(db: Database.Database, id: string, heldCents: bigint | number): void {
  db.prepare(
    `INSERT INTO executions (execution_id, workflow_id, spend_auth_token_id, account_id, agent_id, target_id, request_json, pricing_snapshot,
       authorization_held_cents, currency, state, created_at, updated_at)
     VALUES (?, ?, ?, 'acct_1', 'agt_1', 'lexec:target:v1:flux', '{}', ?, ?, 'USD', 'succeeded', 1, 1)`,
  ).run(id, `wf-${id}`, `tok-${id}`, legacySnapshot, heldCents);
}

function legacyReceipt(db: Database.Database, executionId: string, receiptId: string, cents: number): void {
  db.prepare("INSERT INTO receipts (receipt_id, execution_id, amount_cents, currency, ledger_settlement_id, created_at) VALUES (?, ?, ?, 'USD', ?, 1)").run(
    receiptId,
    executionId,
    cents,
    `stl_${receiptId}`,
  );
}

function legacyAttempt(db: Database.Database, executionId: string, costCents: number | null): void {
  db.prepare(
    "INSERT INTO provider_attempts (attempt_id, execution_id, attempt_number, state, cost_cents, currency, created_at, updated_at) VALUES (?, ?, 1, 'completed', ?, 'USD', 1, 1)",
  ).run(`att_${executionId}`, executionId, costCents);
}

function appliedVersions(db: Database.Database): number[] {
  return (db.prepare('SELECT version FROM schema_migrations ORDER BY version').all() as { version: bigint }[]).map((row) => Number(row.version));
}

function dump(db: Database.Database): string {
  const tables = ['executions', 'receipts', 'provider_attempts', 'artifacts', 'admission_fingerprints'];
  return JSON.stringify(tables.map((table) => db.prepare(`SELECT * FROM ${table} ORDER BY 1`).all()), (_k, v: unknown) => (typeof v === 'bigint' ? v.toString() : v));
}

describe('executor migrations', () => {
  it('a new database gets every migration once; reopening changes nothing', () => {
    const db = openDatabase(path, EXECUTOR_MIGRATIONS);
    expect(appliedVersions(db)).toEqual([1, 2, 3, 4, 5]);
    db.close();
    const again = openDatabase(path, EXECUTOR_MIGRATIONS);
    expect(appliedVersions(again)).toEqual([1, 2, 3, 4, 5]);
    again.close();
  });

  it('migrates a legacy v4.3 database: micro-units beside the cents, exact receipts at scale 2, ids unchanged', () => {
    fixtureAt(1, (db) => {
      legacyExecution(db, 'exe_a', 90);
      legacyExecution(db, 'exe_b', 250);
      legacyReceipt(db, 'exe_a', 'rcpt_a', 1);
      legacyReceipt(db, 'exe_b', 'rcpt_b', 6);
      legacyAttempt(db, 'exe_a', 1);
      legacyAttempt(db, 'exe_b', null);
    });
    const db = openDatabase(path, EXECUTOR_MIGRATIONS);
    expect(appliedVersions(db)).toEqual([1, 2, 3, 4, 5]);
    expect(db.prepare('SELECT execution_id, authorization_held_cents, authorization_held_units, units_scale FROM executions ORDER BY 1').all()).toEqual([
      { execution_id: 'exe_a', authorization_held_cents: 90n, authorization_held_units: 900_000n, units_scale: 6n },
      { execution_id: 'exe_b', authorization_held_cents: 250n, authorization_held_units: 2_500_000n, units_scale: 6n },
    ]);
    expect(
      db
        .prepare(
          'SELECT receipt_id, ledger_settlement_id, amount_cents, amount_units, units_scale, exact_amount, scale, currency, provider_request_id, price_model_snapshot, receipt_shape FROM receipts ORDER BY 1',
        )
        .all(),
    ).toEqual([
      {
        receipt_id: 'rcpt_a',
        ledger_settlement_id: 'stl_rcpt_a',
        amount_cents: 1n,
        amount_units: 10_000n,
        units_scale: 6n,
        exact_amount: 1n,
        scale: 2n,
        currency: 'USD',
        provider_request_id: 'rcpt_a',
        price_model_snapshot: '{"estimated_price_cents":"1","model":"fal-ai/flux/schnell","provider":"fal"}',
        receipt_shape: 'legacy_migrated',
      },
      {
        receipt_id: 'rcpt_b',
        ledger_settlement_id: 'stl_rcpt_b',
        amount_cents: 6n,
        amount_units: 60_000n,
        units_scale: 6n,
        exact_amount: 6n,
        scale: 2n,
        currency: 'USD',
        provider_request_id: 'rcpt_b',
        price_model_snapshot: '{"estimated_price_cents":"1","model":"fal-ai/flux/schnell","provider":"fal"}',
        receipt_shape: 'legacy_migrated',
      },
    ]);
    expect(db.prepare('SELECT attempt_id, cost_cents, exact_amount, scale FROM provider_attempts ORDER BY 1').all()).toEqual([
      { attempt_id: 'att_exe_a', cost_cents: 1n, exact_amount: 1n, scale: 2n },
      { attempt_id: 'att_exe_b', cost_cents: null, exact_amount: null, scale: null },
    ]);
    const before = dump(db);
    db.close();
    const reopened = openDatabase(path, EXECUTOR_MIGRATIONS);
    expect(dump(reopened)).toBe(before);
    reopened.close();
  });

  it('refuses an amount beyond the micro-unit range and commits nothing', () => {
    // 922 337 203 685 478 cents x 10^4 passes 2^63 - 1.
    fixtureAt(1, (db) => {
      legacyExecution(db, 'exe_ok', 90);
      legacyExecution(db, 'exe_huge', 922_337_203_685_478n);
      legacyReceipt(db, 'exe_ok', 'rcpt_ok', 1);
    });
    const raw = new Database(path);
    raw.defaultSafeIntegers(true);
    const before = dump(raw);
    raw.close();

    expect(() => openDatabase(path, EXECUTOR_MIGRATIONS)).toThrow(/micro-unit migration.*executions.authorization_held_cents of execution_id exe_huge is beyond the micro-unit range.*Nothing was changed/);

    const after = new Database(path);
    after.defaultSafeIntegers(true);
    expect(appliedVersions(after)).toEqual([1]);
    expect(dump(after)).toBe(before);
    const columns = (after.prepare('PRAGMA table_info(executions)').all() as { name: string }[]).map((column) => column.name);
    expect(columns).not.toContain('authorization_held_units');
    after.close();
  });

  it('the largest convertible amount converts exactly', () => {
    fixtureAt(1, (db) => { legacyExecution(db, 'exe_max', 922_337_203_685_477n); });
    const db = openDatabase(path, EXECUTOR_MIGRATIONS);
    expect(db.prepare('SELECT authorization_held_units FROM executions').get()).toEqual({ authorization_held_units: 9_223_372_036_854_770_000n });
    db.close();
  });

  it('migrates a v0.2.4 (micro-unit) database to precise receipts', () => {
    fixtureAt(2, (db) => {
      legacyExecution(db, 'exe_a', 90);
      db.prepare('UPDATE executions SET authorization_held_units = 900000, units_scale = 6').run();
      legacyReceipt(db, 'exe_a', 'rcpt_a', 3);
      db.prepare('UPDATE receipts SET amount_units = 30000, units_scale = 6').run();
    });
    const db = openDatabase(path, EXECUTOR_MIGRATIONS);
    expect(appliedVersions(db)).toEqual([1, 2, 3, 4, 5]);
    expect(db.prepare('SELECT exact_amount, scale, amount_units, receipt_shape FROM receipts').get()).toEqual({
      exact_amount: 3n,
      scale: 2n,
      amount_units: 30_000n,
      receipt_shape: 'legacy_migrated',
    });
    db.close();
  });

  it('refuses a legacy receipt whose frozen snapshot cannot be projected, committing nothing', () => {
    fixtureAt(2, (db) => {
      legacyExecution(db, 'exe_a', 90);
      db.prepare("UPDATE executions SET pricing_snapshot = '{\"provider\":\"fal\"}'").run();
      legacyReceipt(db, 'exe_a', 'rcpt_a', 3);
    });
    expect(() => openDatabase(path, EXECUTOR_MIGRATIONS)).toThrow(/precise-receipt migration.*receipt rcpt_a/);
    const after = new Database(path);
    expect(appliedVersions(after)).toEqual([1, 2]);
    after.close();
  });

  it('never rewrites an already precise receipt', () => {
    const db = openDatabase(path, EXECUTOR_MIGRATIONS);
    legacyExecution(db, 'exe_p', 90);
    legacyExecution(db, 'exe_l', 90);
    db.prepare(
      `INSERT INTO receipts (receipt_id, execution_id, amount_cents, amount_units, units_scale, exact_amount, scale, currency, provider_request_id,
         price_model_snapshot, receipt_shape, ledger_settlement_id, created_at)
       VALUES ('rcpt_p', 'exe_p', 1, 3000, 6, 3000, 6, 'USD', 'req_provider', '{"snapshot_version":1}', 'precise', 'stl_p', 2)`,
    ).run();
    legacyReceipt(db, 'exe_l', 'rcpt_l', 4);
    const precise = db.prepare("SELECT * FROM receipts WHERE receipt_id = 'rcpt_p'").get();
    applyPreciseReceiptConversion(db);
    applyPreciseReceiptConversion(db);
    expect(db.prepare("SELECT * FROM receipts WHERE receipt_id = 'rcpt_p'").get()).toEqual(precise);
    expect(db.prepare("SELECT exact_amount, scale, receipt_shape FROM receipts WHERE receipt_id = 'rcpt_l'").get()).toEqual({
      exact_amount: 4n,
      scale: 2n,
      receipt_shape: 'legacy_migrated',
    });
    db.close();
  });
});
