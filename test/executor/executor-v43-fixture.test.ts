import { join } from 'node:path';
import Database from 'better-sqlite3';
import { execa } from 'execa';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { makeTempDir, removeDir } from '../support/cli.js';
import { databaseContent, fileDigest, headerJournal, sqliteCompanions, V43_BUILD_SCRIPT, V43_FIXTURE } from '../support/executor-v43-fixture.js';

let dir: string;

beforeEach(async () => {
  dir = await makeTempDir('lexec-v43-fixture-');
});

afterEach(async () => {
  await removeDir(dir);
});

describe('the committed v4.3 executor fixture', () => {
  it('is what scripts/fixtures/build-executor-v43.mjs builds from schema.sql and rows.sql (schema and rows, each value with its storage class)', async () => {
    const committed = await fileDigest(V43_FIXTURE);
    const built = join(dir, 'built.sqlite');
    const run = await execa(process.execPath, [V43_BUILD_SCRIPT, built], { reject: false });
    expect(run.exitCode, run.stderr).toBe(0);
    expect(await sqliteCompanions(built)).toEqual([]);
    expect(databaseContent(built)).toEqual(databaseContent(V43_FIXTURE));
    // Reading it wrote nothing into the repository's copy.
    expect(await fileDigest(V43_FIXTURE)).toBe(committed);
  });

  it('is a rollback-journal database at schema version 1 holding only integer whole-cent amounts, the edge values among them', () => {
    expect(headerJournal(V43_FIXTURE)).toBe('rollback');
    const db = new Database(V43_FIXTURE, { readonly: true });
    db.defaultSafeIntegers(true);
    try {
      expect(db.prepare('SELECT version, name FROM schema_migrations').all()).toEqual([{ version: 1n, name: 'legacy_v4_3_whole_cents' }]);
      const columns = (table: string) => (db.prepare(`PRAGMA table_info(${table})`).all() as { name: string }[]).map((column) => column.name);
      expect(columns('executions')).not.toContain('authorization_held_units');
      expect(columns('receipts')).not.toContain('exact_amount');
      const amounts = db
        .prepare(
          `SELECT typeof(authorization_held_cents) AS storage, authorization_held_cents AS cents FROM executions
           UNION ALL SELECT typeof(amount_cents), amount_cents FROM receipts
           UNION ALL SELECT typeof(cost_cents), cost_cents FROM provider_attempts`,
        )
        .all() as { storage: string; cents: bigint | null }[];
      expect(new Set(amounts.map((row) => row.storage))).toEqual(new Set(['integer', 'null']));
      const cents = amounts.flatMap((row) => (row.cents === null ? [] : [row.cents]));
      expect(cents).toContain(1n);
      expect(cents).toContain(922_337_203_685_477n);
      expect(db.prepare('SELECT DISTINCT state FROM executions ORDER BY 1').pluck().all()).toEqual(['failed', 'pending', 'reconciliation', 'running', 'succeeded']);
    } finally {
      db.close();
    }
  });
});
