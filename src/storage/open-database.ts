import Database from 'better-sqlite3';
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { BugError } from '../errors.js';

/** One numbered migration: applied once, in order, inside its own transaction. */
export interface Migration {
  readonly version: number;
  readonly name: string;
  /** SQL to run, or a function for migrations that must check rows before changing them. */
  readonly up: string | ((db: Database.Database) => void);
}

/**
 * Opens a SQLite database the way every lexec store needs it: WAL journal with full
 * synchronous commits (a committed money record survives power loss), foreign keys on, a busy
 * timeout for concurrent processes, and 64-bit integers read as bigint so no amount is ever a
 * float. Applies pending migrations; reopening an up-to-date database changes nothing.
 */
export function openDatabase(path: string, migrations: readonly Migration[]): Database.Database {
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  const db = new Database(path);
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = FULL');
  db.pragma('foreign_keys = ON');
  db.pragma('busy_timeout = 5000');
  db.defaultSafeIntegers(true);
  migrate(db, migrations);
  return db;
}

/**
 * Runs `work` (one or more commits) without waiting for their own fsync. Only for commits whose
 * loss in a power failure something else repairs: WAL frames are synced in order, so the next
 * durable commit carries them, and a process crash loses none of them. The connection returns
 * to full synchronous commits afterwards. `work` must be synchronous.
 */
export function withoutOwnFsync<T>(db: Database.Database, work: () => T): T {
  // `exec`, not a statement prepared once: SQLite applies `PRAGMA synchronous` when it compiles
  // the statement, so a kept one would not take effect on its first run; and `exec` costs a
  // few µs where `db.pragma` (a statement object each time) costs 10-15 µs.
  db.exec('PRAGMA synchronous = NORMAL');
  try {
    return work();
  } finally {
    db.exec('PRAGMA synchronous = FULL');
  }
}

export function migrate(db: Database.Database, migrations: readonly Migration[]): void {
  db.exec('CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)');
  const applied = new Set(
    (db.prepare('SELECT version FROM schema_migrations').all() as { version: bigint }[]).map((row) => Number(row.version)),
  );
  const ordered = [...migrations].sort((a, b) => a.version - b.version);
  ordered.forEach((migration, index) => {
    if (migration.version !== index + 1) throw new BugError(`migration ${migration.name} is numbered ${migration.version}, expected ${index + 1}`);
  });
  for (const migration of ordered) {
    if (applied.has(migration.version)) continue;
    db.transaction(() => {
      if (typeof migration.up === 'string') db.exec(migration.up);
      else migration.up(db);
      db.prepare('INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)').run(migration.version, migration.name, Date.now());
    }).immediate();
  }
}
