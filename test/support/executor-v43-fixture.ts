import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { copyFile, readdir, readFile } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import Database from 'better-sqlite3';
import { PACKAGE_ROOT } from './cli.js';

/** The committed v4.3-shape executor database (rollback-journal mode), built by BUILD_SCRIPT. */
export const V43_FIXTURE = join(PACKAGE_ROOT, 'test', 'fixtures', 'executor-v4.3', 'executor.sqlite');
export const V43_BUILD_SCRIPT = join(PACKAGE_ROOT, 'scripts', 'fixtures', 'build-executor-v43.mjs');

/** The committed fixture never changes under a test: each one works on its own copy. */
export async function copyV43Fixture(path: string): Promise<void> {
  await copyFile(V43_FIXTURE, path);
}

/** Changes a copy the way a damaged or hand-edited v4.3 database could be (constraints off). */
export function injectIntoCopy(path: string, sql: string): void {
  const db = new Database(path);
  try {
    db.pragma('ignore_check_constraints = ON');
    db.exec(sql);
  } finally {
    db.close();
  }
}

export async function fileDigest(path: string): Promise<string> {
  return createHash('sha256').update(await readFile(path)).digest('hex');
}

/** The SQLite files beside the database (`-wal`, `-shm`, `-journal`), by suffix. */
export async function sqliteCompanions(path: string): Promise<string[]> {
  const prefix = `${basename(path)}-`;
  return (await readdir(dirname(path))).filter((name) => name.startsWith(prefix)).map((name) => name.slice(prefix.length));
}

/**
 * What a database holds, independent of the SQLite library that wrote its bytes: the journal
 * mode its header records, every schema object's SQL, and every row of every table with each
 * value's storage class (so a REAL 12 and an INTEGER 12 differ).
 */
export function databaseContent(path: string): unknown {
  const db = new Database(path, { readonly: true });
  try {
    db.defaultSafeIntegers(true);
    const schema = db.prepare("SELECT type, name, tbl_name, sql FROM sqlite_master WHERE name NOT LIKE 'sqlite_%' ORDER BY type, name").all() as {
      type: string;
      name: string;
    }[];
    const tables = schema.filter((entry) => entry.type === 'table').map((entry) => entry.name);
    const rows = Object.fromEntries(
      tables.map((table) => {
        const columns = (db.prepare(`PRAGMA table_info(${table})`).all() as { name: string }[]).map((column) => column.name);
        const typed = columns.map((column) => `typeof(${column}) || ':' || quote(${column})`).join(', ');
        return [table, db.prepare(`SELECT ${typed} FROM ${table} ORDER BY rowid`).raw().all()];
      }),
    );
    return { journal: headerJournal(path), schema, rows };
  } finally {
    db.close();
  }
}

/** The journal a SQLite file's header records (bytes 18-19): 1/1 rollback journal, 2/2 WAL. */
export function headerJournal(path: string): 'rollback' | 'wal' | 'unknown' {
  const [write, read] = readFileSync(path).subarray(18, 20);
  if (write === 1 && read === 1) return 'rollback';
  if (write === 2 && read === 2) return 'wal';
  return 'unknown';
}
