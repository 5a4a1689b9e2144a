import { existsSync } from 'node:fs';
import { isAbsolute } from 'node:path';
import Database from 'better-sqlite3';
import type { z } from 'zod';
import { toFieldIssues } from '../../config/zod-issues.js';
import { BugError, UsageError, UserError } from '../../errors.js';
import { loadExecutorConfig } from '../config/validate-executor-config.js';
import { credentialStanding, refusedFrom, type CredentialStanding, type ExecutorCredentialKind } from '../domain/credential-standing.js';
import { createCredentialStore, type CredentialRecord, type CredentialStore } from '../store/credential-store.js';
import { EXECUTOR_MIGRATIONS } from '../store/migrations/executor-migrations.js';

/*
 * The executor's credential table as its owner reaches it from outside the executor process
 * (`lexec executor credentials list|revoke|rotate`, and the launcher in-process): the database is
 * opened as it is, never migrated, and only when its schema is the one this binary knows. The
 * executor may be running: the database is in WAL (readers never wait) and every write waits up to
 * the busy timeout for the executor's own.
 */

/** Which executor: its configuration (the database is `storage.database_path`), or the database itself. */
export type ExecutorDatabaseTarget = { readonly configPath: string } | { readonly databasePath: string };

/** One credential as the commands report it: never the capability, nor its digest. Times ISO 8601. */
export interface ExecutorCredentialView {
  readonly credential_id: string;
  readonly kind: ExecutorCredentialKind;
  /** As of the command: `active`, `expiring` (accepted until `expires_at`) or `revoked` (refused since `revoked_at`). */
  readonly status: CredentialStanding;
  readonly created_at: string;
  /** The minute of the last request that presented it; null: never used. */
  readonly last_used_at: string | null;
  /** While `expiring`: the end of its rotation's grace. */
  readonly expires_at: string | null;
  /** While `revoked`: when it was revoked, or when its grace ended. */
  readonly revoked_at: string | null;
}

const iso = (ms: number | null): string | null => (ms === null ? null : new Date(ms).toISOString());

export function credentialView(record: CredentialRecord, now: number): ExecutorCredentialView {
  const status = credentialStanding(record, now);
  const end = iso(refusedFrom(record));
  return {
    credential_id: record.credentialId,
    kind: record.kind,
    status,
    created_at: new Date(record.createdAt).toISOString(),
    last_used_at: iso(record.lastUsedAt),
    expires_at: status === 'expiring' ? end : null,
    revoked_at: status === 'revoked' ? end : null,
  };
}

/** The view of a credential this command just wrote (its absence is a bug: nothing deletes rows). */
export function storedView(store: CredentialStore, credentialId: string, now: number): ExecutorCredentialView {
  const record = store.byId(credentialId);
  if (record === undefined) throw new BugError(`credential ${credentialId} vanished from the executor's credential table`);
  return credentialView(record, now);
}

/** Parses a service request (the launcher calls these in-process): a bad one is a usage error naming each field. */
export function parseCredentialRequest<S extends z.ZodType>(schema: S, request: unknown): z.output<S> {
  const parsed = schema.safeParse(request, { reportInput: true });
  if (parsed.success) return parsed.data;
  throw new UsageError('invalid_credentials_request', 'The credentials request is not valid.', {
    nextStep: 'Fix each field listed; run the command with --help to see its flags.',
    issues: toFieldIssues(parsed.error.issues),
  });
}

/** The database a target names: from the configuration (read and validated), or as given (absolute). */
export async function executorDatabasePath(target: ExecutorDatabaseTarget): Promise<string> {
  if ('configPath' in target) return (await loadExecutorConfig(target.configPath)).storage.database_path;
  if (!isAbsolute(target.databasePath)) {
    throw new UsageError('database_path_not_absolute', 'The executor database path must be absolute; got a relative path.', {
      nextStep: "Pass the full path of the executor's database (storage.database_path of its configuration).",
    });
  }
  return target.databasePath;
}

function schemaVersion(db: Database.Database): number {
  const recorded = db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'").get() !== undefined;
  if (!recorded) return 0;
  const newest = db.prepare('SELECT MAX(version) FROM schema_migrations').pluck().get() as bigint | null;
  return newest === null ? 0 : Number(newest);
}

function schemaMismatch(path: string, found: number, known: number): UserError {
  const older = found < known;
  return new UserError(
    'executor_database_schema_mismatch',
    `The executor database ${path} has schema version ${found.toString()}; this lexec knows version ${known.toString()}, so its credentials are not read or changed here. The database was not changed.`,
    {
      nextStep: older
        ? 'Start the executor of this lexec version once (it migrates its database at start), then run the command again.'
        : 'Use the lexec version that migrated this database (the executor running on it).',
    },
  );
}

/**
 * Opens the executor's database without migrating it: absent, unreadable, or of another schema
 * version is refused and the file is left as it was.
 */
export function openExecutorCredentialDatabase(path: string): Database.Database {
  if (!existsSync(path)) {
    throw new UserError('executor_database_missing', `The executor database ${path} does not exist.`, {
      nextStep: 'Start the executor once (it creates and migrates its database), or check storage.database_path in its configuration.',
    });
  }
  let db: Database.Database | undefined;
  try {
    db = new Database(path, { fileMustExist: true });
    db.pragma('busy_timeout = 5000');
    db.pragma('synchronous = FULL');
    db.pragma('foreign_keys = ON');
    db.defaultSafeIntegers(true);
    const found = schemaVersion(db);
    if (found !== EXECUTOR_MIGRATIONS.length) throw schemaMismatch(path, found, EXECUTOR_MIGRATIONS.length);
    return db;
  } catch (error) {
    db?.close();
    if (error instanceof Database.SqliteError) {
      throw new UserError('executor_database_unreadable', `The executor database ${path} cannot be read (SQLite: ${error.code}).`, {
        nextStep: 'Check that storage.database_path names the executor database and that this user can read and write it.',
      });
    }
    throw error;
  }
}

/** Runs `work` on the credential table of the database at `path`, opened for it alone and closed after. */
export async function withCredentialStore<T>(path: string, work: (store: CredentialStore) => Promise<T> | T): Promise<T> {
  const db = openExecutorCredentialDatabase(path);
  try {
    return await work(createCredentialStore(db));
  } finally {
    db.close();
  }
}
