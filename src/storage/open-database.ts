import Database from 'better-sqlite3';
import { BugError, UserError } from '../errors.js';
import { preparePrivateDatabase, type TightenedFile } from './private-state.js';

/** One numbered migration: applied once, in order, in the one transaction of its upgrade (see migrate). */
export interface Migration {
  readonly version: number;
  readonly name: string;
  /** SQL to run, or a function for migrations that must check rows before changing them. */
  readonly up: string | ((db: Database.Database) => void);
  /**
   * The migration rebuilds tables (SQLite's way to change a table's CHECK constraints: create the
   * new table, copy the rows, drop the old one, rename the new one). It runs with foreign-key
   * enforcement off, as SQLite's procedure requires — dropping a referenced table would otherwise
   * delete or refuse — and `PRAGMA foreign_key_check` must find every reference intact before the
   * upgrade commits.
   */
  readonly rebuildsTables?: boolean;
}

export interface OpenDatabaseOptions {
  /** Told which files of the database were open to group or others and were tightened (to log it). */
  readonly onTightened?: (files: readonly TightenedFile[]) => void;
}

/**
 * Opens a SQLite database the way every lexec store needs it: WAL journal with full
 * synchronous commits (a committed money record survives power loss), foreign keys on, a busy
 * timeout for concurrent processes, and 64-bit integers read as bigint so no amount is ever a
 * float. Applies pending migrations; reopening an up-to-date database changes nothing.
 *
 * WAL is switched on only after the migrations: switching rewrites the file's header, and a
 * database an older binary left in rollback-journal mode must stay byte for byte as it was when
 * a migration refuses (its operator may still need it as it is). A database that cannot run in
 * WAL is refused (enterWal). A refusal closes the database.
 */
export function openDatabase(path: string, migrations: readonly Migration[], options: OpenDatabaseOptions = {}): Database.Database {
  // Private files (0600 in a 0700 directory) whatever the umask, before SQLite creates any.
  const tightened = preparePrivateDatabase(path);
  if (tightened.length > 0) options.onTightened?.(tightened);
  const db = new Database(path);
  try {
    db.pragma('synchronous = FULL');
    db.pragma('foreign_keys = ON');
    db.pragma('busy_timeout = 5000');
    db.defaultSafeIntegers(true);
    migrate(db, migrations);
    enterWal(db, path);
  } catch (error) {
    db.close();
    throw error;
  }
  return db;
}

/**
 * Switches the database to WAL and proves a write transaction can start in it, or refuses to go
 * on (`database_wal_unavailable`, naming the path). Without WAL a commit's durability and the
 * readers' independence from writers are not what lexec is built on, so a server never runs in
 * another mode. SQLite does not always say no: it answers another mode where WAL cannot be
 * entered at all (an in-memory or temporary database, a VFS without shared memory), switches
 * and then cannot write where the shared-memory index (`<db>-shm`) cannot be opened for writing
 * (a read-only one, another user's, a network file system without shared mmap), or fails while
 * another process holds the rollback-journal database open. Each is caught here.
 */
export function enterWal(db: Database.Database, path: string): void {
  let mode: unknown;
  try {
    mode = db.pragma('journal_mode = WAL', { simple: true });
    if (mode === 'wal') {
      // Takes the WAL write lock through the shared-memory index; writes nothing.
      db.exec('BEGIN IMMEDIATE');
      db.exec('ROLLBACK');
    }
  } catch (error) {
    const code = error instanceof Database.SqliteError ? error.code : 'error';
    throw walUnavailable(path, `SQLite: ${code}`);
  }
  if (mode !== 'wal') throw walUnavailable(path, `SQLite kept the journal mode "${String(mode)}"`);
}

function walUnavailable(path: string, why: string): UserError {
  return new UserError('database_wal_unavailable', `The database ${path} cannot run in WAL journal mode (${why}); lexec's servers run on WAL only, so nothing was started.`, {
    nextStep: `Keep the database on a local file system that supports shared memory and file locks (not a network share), make sure no other process holds it open, and that ${path}-wal and ${path}-shm, if present, are regular files this user can write; then start again.`,
  });
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

/**
 * Applies the pending migrations, all of them in one IMMEDIATE transaction: an upgrade lands
 * whole or not at all, so a migration that refuses (or fails) leaves the database exactly as it
 * was — not even `schema_migrations` is created. Nothing is written when nothing is pending.
 */
export function migrate(db: Database.Database, migrations: readonly Migration[]): void {
  const ordered = [...migrations].sort((a, b) => a.version - b.version);
  ordered.forEach((migration, index) => {
    if (migration.version !== index + 1) throw new BugError(`migration ${migration.name} is numbered ${migration.version}, expected ${index + 1}`);
  });
  // A read first, so an up-to-date database takes no write lock and sees no write.
  const applied = appliedVersions(db);
  refuseNewerSchema(db.name, applied, ordered.length);
  const pending = pendingMigrations(ordered, applied);
  if (pending.length === 0) return;
  // `PRAGMA foreign_keys` cannot change inside a transaction: off before it, on again after it.
  const rebuilds = pending.some((migration) => migration.rebuildsTables === true);
  const enforcing = Number(db.pragma('foreign_keys', { simple: true })) === 1;
  if (rebuilds && enforcing) db.pragma('foreign_keys = OFF');
  try {
    db.transaction(() => {
      db.exec('CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)');
      // Read again under the write lock: another process may have migrated in between.
      const record = db.prepare('INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)');
      for (const migration of pendingMigrations(ordered, appliedVersions(db))) {
        if (typeof migration.up === 'string') db.exec(migration.up);
        else migration.up(db);
        record.run(migration.version, migration.name, Date.now());
      }
      // Rebuilt tables were copied with enforcement off: every reference must still hold, or nothing commits.
      if (rebuilds && (db.pragma('foreign_key_check') as unknown[]).length > 0) throw new BugError('a migration that rebuilds tables left a foreign key without its row');
    }).immediate();
  } finally {
    if (rebuilds && enforcing) db.pragma('foreign_keys = ON');
  }
}

/** The versions a database records as applied (empty before its first migration). */
function appliedVersions(db: Database.Database): number[] {
  const recorded = db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'").get() !== undefined;
  if (!recorded) return [];
  return (db.prepare('SELECT version FROM schema_migrations').safeIntegers(true).all() as { version: bigint }[]).map((row) => Number(row.version));
}

function pendingMigrations(ordered: readonly Migration[], applied: readonly number[]): Migration[] {
  return ordered.filter((migration) => !applied.includes(migration.version));
}

/**
 * A database a newer lexec migrated is refused before anything is written: this binary would
 * read and write tables whose meaning changed after it was built. The operator's way back is
 * the newer binary, or this version's own pre-upgrade backup (spec §8: an upgraded database is
 * not a rollback mechanism).
 */
function refuseNewerSchema(path: string, applied: readonly number[], known: number): void {
  const newest = Math.max(0, ...applied);
  if (newest <= known) return;
  throw new UserError(
    'database_newer_than_binary',
    `The database ${path} was migrated by a newer lexec (schema version ${newest.toString()}; this binary knows up to ${known.toString()}). Its content was not changed.`,
    { nextStep: 'Run the lexec version that migrated it, or restore the cold backup taken for this version before the upgrade.' },
  );
}
