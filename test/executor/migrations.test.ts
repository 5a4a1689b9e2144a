import Database from 'better-sqlite3';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { UserError } from '../../src/errors.js';
import { applyPreciseReceiptConversion, EXECUTOR_MIGRATIONS } from '../../src/executor/store/migrations/executor-migrations.js';
import { migrate, openDatabase } from '../../src/storage/open-database.js';
import { makeTempDir, removeDir } from '../support/cli.js';
import { copyV43Fixture, fileDigest, headerJournal, injectIntoCopy, sqliteCompanions } from '../support/executor-v43-fixture.js';

let dir: string;
let path: string;

beforeEach(async () => {
  dir = await makeTempDir('lexec-migrations-');
  path = join(dir, 'executor.db');
});

afterEach(async () => {
  await removeDir(dir);
});

/**
 * A database as an older binary left it, from a copy of the committed v4.3 fixture: version 1 is
 * the fixture itself; version 2 (v0.2.4) is the fixture after that release's micro-unit
 * migration. Both stay in rollback-journal mode, as those binaries left them.
 */
async function fixtureAt(version: 1 | 2, fill?: (db: Database.Database) => void): Promise<void> {
  await copyV43Fixture(path);
  const db = new Database(path);
  db.defaultSafeIntegers(true);
  if (version === 2) migrate(db, EXECUTOR_MIGRATIONS.slice(0, 2));
  fill?.(db);
  db.close();
}

function openRaw(): Database.Database {
  const db = new Database(path, { readonly: true });
  db.defaultSafeIntegers(true);
  return db;
}

function appliedVersions(db: Database.Database): number[] {
  return (db.prepare('SELECT version FROM schema_migrations ORDER BY version').all() as { version: bigint }[]).map((row) => Number(row.version));
}

function dump(db: Database.Database): string {
  const tables = ['executions', 'receipts', 'provider_attempts', 'artifacts', 'admission_fingerprints'];
  return JSON.stringify(tables.map((table) => db.prepare(`SELECT * FROM ${table} ORDER BY 1`).all()), (_k, v: unknown) => (typeof v === 'bigint' ? v.toString() : v));
}

/** What `openDatabase` threw: a `migration_refused` user error, never anything else. */
function refusal(): UserError {
  try {
    openDatabase(path, EXECUTOR_MIGRATIONS).close();
  } catch (error) {
    expect(error).toBeInstanceOf(UserError);
    expect(error).toMatchObject({ code: 'migration_refused', exitCode: 1 });
    return error as UserError;
  }
  throw new Error('the migration was not refused');
}

const LARGEST = 922_337_203_685_477n;

describe('executor migrations', () => {
  it('a new database gets every migration once; reopening changes nothing', () => {
    const db = openDatabase(path, EXECUTOR_MIGRATIONS);
    expect(appliedVersions(db)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14]);
    db.close();
    const again = openDatabase(path, EXECUTOR_MIGRATIONS);
    expect(appliedVersions(again)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14]);
    again.close();
  });

  it('reopening an up-to-date WAL database writes nothing: its bytes stay as they were', async () => {
    openDatabase(path, EXECUTOR_MIGRATIONS).close();
    expect(headerJournal(path)).toBe('wal');
    const before = await fileDigest(path);
    const again = openDatabase(path, EXECUTOR_MIGRATIONS);
    expect(await fileDigest(path)).toBe(before);
    again.close();
    expect(await fileDigest(path)).toBe(before);
  });

  it('a database migration 10 marked as answered at the ledger has its parked executions brought to the ledger again (migration 11)', async () => {
    await fixtureAt(1);
    const ten = openDatabase(path, EXECUTOR_MIGRATIONS.filter((migration) => migration.version <= 10));
    // What a database upgraded by the release with migration 10 holds: the parked execution
    // counted as answered, whether or not its record was ever opened.
    expect(ten.prepare('SELECT execution_id FROM executions WHERE ledger_record_at IS NOT NULL').all()).toEqual([{ execution_id: 'exe_v43_reconciliation' }]);
    ten.close();
    const db = openDatabase(path, EXECUTOR_MIGRATIONS);
    expect(appliedVersions(db)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14]);
    expect(db.prepare('SELECT execution_id FROM executions WHERE ledger_record_at IS NOT NULL').all()).toEqual([]);
    // The index the closed-run rescheduler and restart recovery read (execution-store.ts).
    expect(db.prepare("SELECT execution_id FROM executions WHERE state = 'reconciliation' AND ledger_record_at IS NULL").all()).toEqual([{ execution_id: 'exe_v43_reconciliation' }]);
    db.close();
  });

  it('migrates the v4.3 fixture: micro-units beside the cents, exact amounts at scale 2, ids unchanged, then WAL', async () => {
    await fixtureAt(1);
    expect(headerJournal(path)).toBe('rollback');
    const db = openDatabase(path, EXECUTOR_MIGRATIONS);
    expect(appliedVersions(db)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14]);
    expect(headerJournal(path)).toBe('wal');
    expect(db.prepare('SELECT execution_id, authorization_held_cents, authorization_held_units, units_scale FROM executions ORDER BY 1').all()).toEqual([
      { execution_id: 'exe_v43_failed', authorization_held_cents: 90n, authorization_held_units: 900_000n, units_scale: 6n },
      { execution_id: 'exe_v43_largest', authorization_held_cents: LARGEST, authorization_held_units: 9_223_372_036_854_770_000n, units_scale: 6n },
      { execution_id: 'exe_v43_one_cent', authorization_held_cents: 1n, authorization_held_units: 10_000n, units_scale: 6n },
      { execution_id: 'exe_v43_pending', authorization_held_cents: 90n, authorization_held_units: 900_000n, units_scale: 6n },
      { execution_id: 'exe_v43_reconciliation', authorization_held_cents: 120n, authorization_held_units: 1_200_000n, units_scale: 6n },
      { execution_id: 'exe_v43_running', authorization_held_cents: 90n, authorization_held_units: 900_000n, units_scale: 6n },
      { execution_id: 'exe_v43_two_images', authorization_held_cents: 250n, authorization_held_units: 2_500_000n, units_scale: 6n },
    ]);
    // Every execution admitted before the seed setting was submitted (or is to be) with the seed.
    expect(db.prepare('SELECT DISTINCT send_seed FROM executions').all()).toEqual([{ send_seed: 1n }]);
    // Whether the ledger ever answered the record of an execution parked by an older binary is
    // not known: it awaits its record (one more call, a replay when the record is open).
    expect(db.prepare('SELECT execution_id FROM executions WHERE ledger_record_at IS NULL AND state = ?').all('reconciliation')).toEqual([{ execution_id: 'exe_v43_reconciliation' }]);
    expect(db.prepare('SELECT COUNT(*) AS n FROM executions WHERE ledger_record_at IS NOT NULL').get()).toEqual({ n: 0n });
    const projection = (estimate: string) => `{"estimated_price_cents":"${estimate}","model":"fal-ai/flux/schnell","provider":"fal"}`;
    const legacyReceipt = (id: string, settlement: string | null, cents: bigint, estimate: string) => ({
      receipt_id: id,
      ledger_settlement_id: settlement,
      amount_cents: cents,
      amount_units: cents * 10_000n,
      units_scale: 6n,
      exact_amount: cents,
      scale: 2n,
      currency: 'USD',
      provider_request_id: id,
      price_model_snapshot: projection(estimate),
      receipt_shape: 'legacy_migrated',
    });
    expect(
      db
        .prepare(
          'SELECT receipt_id, ledger_settlement_id, amount_cents, amount_units, units_scale, exact_amount, scale, currency, provider_request_id, price_model_snapshot, receipt_shape FROM receipts ORDER BY 1',
        )
        .all(),
    ).toEqual([
      legacyReceipt('rcpt_v43_largest', 'stl_v43_largest', LARGEST, String(LARGEST)),
      legacyReceipt('rcpt_v43_one_cent', 'stl_v43_one_cent', 1n, '1'),
      legacyReceipt('rcpt_v43_reconciliation', null, 3n, '3'),
      legacyReceipt('rcpt_v43_two_images', 'stl_v43_two_images', 6n, '6'),
    ]);
    expect(db.prepare('SELECT attempt_id, cost_cents, exact_amount, scale FROM provider_attempts ORDER BY 1').all()).toEqual([
      { attempt_id: 'att_v43_failed_1', cost_cents: null, exact_amount: null, scale: null },
      { attempt_id: 'att_v43_largest_1', cost_cents: LARGEST, exact_amount: LARGEST, scale: 2n },
      { attempt_id: 'att_v43_one_cent_1', cost_cents: 1n, exact_amount: 1n, scale: 2n },
      { attempt_id: 'att_v43_reconciliation_1', cost_cents: 3n, exact_amount: 3n, scale: 2n },
      { attempt_id: 'att_v43_running_1', cost_cents: null, exact_amount: null, scale: null },
      { attempt_id: 'att_v43_two_images_1', cost_cents: null, exact_amount: null, scale: null },
      { attempt_id: 'att_v43_two_images_2', cost_cents: 6n, exact_amount: 6n, scale: 2n },
    ]);
    const before = dump(db);
    db.close();
    const reopened = openDatabase(path, EXECUTOR_MIGRATIONS);
    expect(dump(reopened)).toBe(before);
    reopened.close();
  });

  describe('a legacy amount that is not a whole number of cents refuses the upgrade, leaving the file byte for byte as it was', () => {
    // Each bad value is written into one row of a copy of the v4.3 fixture (constraints off, as
    // a damaged or hand-edited file could hold it). `value` is SQL; the refusal names the
    // table, the column and the row, never the value.
    const held = ['micro-unit migration', 'executions', 'authorization_held_cents', 'execution_id', 'exe_v43_two_images'] as const;
    const receipt = ['micro-unit migration', 'receipts', 'amount_cents', 'receipt_id', 'rcpt_v43_two_images'] as const;
    const cost = ['precise-receipt migration', 'provider_attempts', 'cost_cents', 'attempt_id', 'att_v43_two_images_2'] as const;
    const cases = [
      [...held, '12.5', 'is stored as real, not as a whole number of cents'],
      [...held, "'twelve'", 'is stored as text, not as a whole number of cents'],
      [...held, "x'0c'", 'is stored as blob, not as a whole number of cents'],
      [...held, '1e19', 'is stored as real, not as a whole number of cents'],
      [...held, '922337203685478', 'is beyond the micro-unit range'],
      [...held, '0', 'is not positive'],
      [...held, '-5', 'is not positive'],
      [...receipt, '12.5', 'is stored as real, not as a whole number of cents'],
      [...receipt, "'twelve'", 'is stored as text, not as a whole number of cents'],
      [...receipt, "x'0c'", 'is stored as blob, not as a whole number of cents'],
      [...receipt, '1e19', 'is stored as real, not as a whole number of cents'],
      [...receipt, '922337203685478', 'is beyond the micro-unit range'],
      [...receipt, '-1', 'is negative'],
      [...cost, '12.5', 'is stored as real, not as a whole number of cents'],
      [...cost, "'twelve'", 'is stored as text, not as a whole number of cents'],
      [...cost, "x'0c'", 'is stored as blob, not as a whole number of cents'],
      [...cost, '1e19', 'is stored as real, not as a whole number of cents'],
      [...cost, '-1', 'is negative'],
    ] as const;

    it.each(cases)('%s: %s.%s of %s %s = %s', async (migration, table, column, key, id, value, reason) => {
      await fixtureAt(1);
      injectIntoCopy(path, `UPDATE ${table} SET ${column} = ${value} WHERE ${key} = '${id}'`);
      const before = await fileDigest(path);

      const error = refusal();
      expect(error.message).toBe(`The executor database cannot be migrated (${migration}): ${table}.${column} of ${key} ${id} ${reason}. Its content was not changed.`);
      expect(error.message).not.toContain(value.replaceAll("'", ''));

      expect(await fileDigest(path)).toBe(before);
      expect(await sqliteCompanions(path)).toEqual([]);
      expect(headerJournal(path)).toBe('rollback');
    });

    it.each([
      [receipt[1], receipt[2], receipt[3], receipt[4], '12.5', 'real'],
      [receipt[1], receipt[2], receipt[3], receipt[4], "'twelve'", 'text'],
      [cost[1], cost[2], cost[3], cost[4], "x'0c'", 'blob'],
    ] as const)('from v0.2.4 too, in the precise-receipt migration: %s.%s of %s %s = %s', async (table, column, key, id, value, storage) => {
      await fixtureAt(2);
      injectIntoCopy(path, `UPDATE ${table} SET ${column} = ${value} WHERE ${key} = '${id}'`);
      const before = await fileDigest(path);

      expect(refusal().message).toBe(
        `The executor database cannot be migrated (precise-receipt migration): ${table}.${column} of ${key} ${id} is stored as ${storage}, not as a whole number of cents. Its content was not changed.`,
      );
      expect(await fileDigest(path)).toBe(before);
      expect(await sqliteCompanions(path)).toEqual([]);
      const after = openRaw();
      expect(appliedVersions(after)).toEqual([1, 2]);
      after.close();
    });
  });

  it('a refused upgrade records no migration: not even the micro-unit one that passed before the refusal', async () => {
    await fixtureAt(1);
    injectIntoCopy(path, "UPDATE provider_attempts SET cost_cents = 12.5 WHERE attempt_id = 'att_v43_one_cent_1'");
    const before = openRaw();
    const content = dump(before);
    before.close();

    expect(refusal().message).toMatch(/precise-receipt migration.*provider_attempts\.cost_cents of attempt_id att_v43_one_cent_1/);

    const after = openRaw();
    expect(appliedVersions(after)).toEqual([1]);
    expect(dump(after)).toBe(content);
    const columns = (after.prepare('PRAGMA table_info(executions)').all() as { name: string }[]).map((column) => column.name);
    expect(columns).not.toContain('authorization_held_units');
    after.close();
  });

  it('refuses a database with executor tables but no recorded schema version, leaving the file as it was', async () => {
    await fixtureAt(1);
    injectIntoCopy(path, 'DELETE FROM schema_migrations');
    const before = await fileDigest(path);
    expect(refusal().message).toBe(
      'The executor database cannot be migrated (legacy schema): the database holds tables but records no schema version, so it is not an executor database lexec wrote. Its content was not changed.',
    );
    expect(await fileDigest(path)).toBe(before);
    expect(await sqliteCompanions(path)).toEqual([]);
  });

  it('refuses a database a newer lexec migrated (a schema version this binary does not know), writing nothing', async () => {
    const db = openDatabase(path, EXECUTOR_MIGRATIONS);
    db.prepare('INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)').run(EXECUTOR_MIGRATIONS.length + 1, 'from_the_future', Date.now());
    db.close();
    const before = await fileDigest(path);
    expect(() => openDatabase(path, EXECUTOR_MIGRATIONS)).toThrow(
      expect.objectContaining({
        code: 'database_newer_than_binary',
        exitCode: 1,
        message: `The database ${path} was migrated by a newer lexec (schema version ${EXECUTOR_MIGRATIONS.length + 1}; this binary knows up to ${EXECUTOR_MIGRATIONS.length}). Its content was not changed.`,
      }),
    );
    expect(await fileDigest(path)).toBe(before);
  });

  it('migrates a v0.2.4 (micro-unit) database to precise receipts', async () => {
    await fixtureAt(2);
    const db = openDatabase(path, EXECUTOR_MIGRATIONS);
    expect(appliedVersions(db)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14]);
    expect(db.prepare("SELECT exact_amount, scale, amount_units, receipt_shape FROM receipts WHERE receipt_id = 'rcpt_v43_two_images'").get()).toEqual({
      exact_amount: 6n,
      scale: 2n,
      amount_units: 60_000n,
      receipt_shape: 'legacy_migrated',
    });
    db.close();
  });

  it('refuses a legacy receipt whose frozen snapshot cannot be projected, leaving the file as it was', async () => {
    await fixtureAt(2, (db) => {
      db.prepare("UPDATE executions SET pricing_snapshot = '{\"provider\":\"fal\"}' WHERE execution_id = 'exe_v43_two_images'").run();
    });
    const before = await fileDigest(path);
    expect(refusal().message).toMatch(/precise-receipt migration.*receipt rcpt_v43_two_images/);
    expect(await fileDigest(path)).toBe(before);
    const after = openRaw();
    expect(appliedVersions(after)).toEqual([1, 2]);
    after.close();
  });

  it('never rewrites an already precise receipt', () => {
    const db = openDatabase(path, EXECUTOR_MIGRATIONS);
    const execution = db.prepare(
      `INSERT INTO executions (execution_id, workflow_id, spend_auth_token_id, account_id, agent_id, target_id, request_json, pricing_snapshot,
         authorization_held_cents, currency, state, created_at, updated_at)
       VALUES (?, ?, ?, 'acct_1', 'agt_1', 'lexec:target:v1:flux', '{}', ?, 90, 'USD', 'succeeded', 1, 1)`,
    );
    const snapshot = JSON.stringify({ provider: 'fal', model: 'fal-ai/flux/schnell', estimated_price_cents: 1 });
    for (const id of ['exe_p', 'exe_l']) execution.run(id, `wf-${id}`, `tok-${id}`, snapshot);
    db.prepare(
      `INSERT INTO receipts (receipt_id, execution_id, amount_cents, amount_units, units_scale, exact_amount, scale, currency, provider_request_id,
         price_model_snapshot, receipt_shape, ledger_settlement_id, created_at)
       VALUES ('rcpt_p', 'exe_p', 1, 3000, 6, 3000, 6, 'USD', 'req_provider', '{"snapshot_version":1}', 'precise', 'stl_p', 2)`,
    ).run();
    db.prepare("INSERT INTO receipts (receipt_id, execution_id, amount_cents, currency, ledger_settlement_id, created_at) VALUES ('rcpt_l', 'exe_l', 4, 'USD', 'stl_l', 1)").run();
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
