import { mkdir, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { UserError } from '../../src/errors.js';
import { EXECUTOR_MIGRATIONS } from '../../src/executor/store/migrations/executor-migrations.js';
import { LEDGER_MIGRATIONS } from '../../src/ledger/store/migrations.js';
import { enterWal, openDatabase } from '../../src/storage/open-database.js';
import { makeTempDir, removeDir } from '../support/cli.js';

/*
 * Issue 24 item 6: a store runs on WAL or not at all. Real SQLite in each case, no stand-in:
 * an in-memory database (SQLite answers "memory" to the switch), a database whose shared-memory
 * index cannot be opened for writing (a directory stands where `<db>-shm` goes: SQLite opens it
 * read-only, switches, and then cannot take the write lock — as with a read-only or another
 * user's `-shm`), and a rollback-journal database another connection is reading (the switch
 * cannot get its lock).
 */

let dir = '';
beforeEach(async () => {
  dir = await makeTempDir('lexec-wal-');
});
afterEach(async () => {
  await removeDir(dir);
});

function refusal(open: () => unknown): UserError {
  try {
    open();
  } catch (error) {
    expect(error).toBeInstanceOf(UserError);
    return error as UserError;
  }
  throw new Error('WAL was not refused');
}

describe('a database that cannot run in WAL is refused, naming its path and the next step', () => {
  it.each([
    ['executor', EXECUTOR_MIGRATIONS],
    ['ledger', LEDGER_MIGRATIONS],
  ] as const)('the %s database, when its -shm cannot be written', async (name, migrations) => {
    const path = join(dir, `${name}.db`);
    await mkdir(`${path}-shm`);
    const error = refusal(() => openDatabase(path, migrations));
    expect(error.code).toBe('database_wal_unavailable');
    expect(error.message).toBe(
      `The database ${path} cannot run in WAL journal mode (SQLite: SQLITE_READONLY); lexec's servers run on WAL only, so nothing was started.`,
    );
    expect(error.nextStep).toContain(`${path}-shm`);
    expect(error.exitCode).toBe(1);
    // Closed on refusal: nothing holds it, and it opens normally once the -shm is repaired.
    await removeDir(`${path}-shm`);
    openDatabase(path, migrations).close();
    expect((await readdir(dir)).sort()).toEqual([`${name}.db`]);
  });

  it('an in-memory database: SQLite keeps the journal mode "memory"', () => {
    const db = new Database(':memory:');
    try {
      const error = refusal(() => {
        enterWal(db, ':memory:');
      });
      expect(error.message).toContain('(SQLite kept the journal mode "memory")');
    } finally {
      db.close();
    }
  });

  it('a rollback-journal database another connection is reading: the switch cannot take its lock', () => {
    const path = join(dir, 'legacy.db');
    const other = new Database(path);
    other.exec('CREATE TABLE t (x)');
    other.exec('BEGIN');
    other.prepare('SELECT * FROM t').all();
    try {
      const error = refusal(() => openDatabase(path, []));
      expect(error.message).toContain('(SQLite: SQLITE_BUSY)');
    } finally {
      other.exec('ROLLBACK');
      other.close();
    }
    const db = openDatabase(path, []);
    expect(db.pragma('journal_mode', { simple: true })).toBe('wal');
    db.close();
  }, 120_000);
});
