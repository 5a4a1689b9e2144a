import type Database from 'better-sqlite3';
import type { ExecutorCredentialKind } from '../domain/credential-standing.js';
import { withoutOwnFsync } from '../../storage/open-database.js';

/*
 * The SQL of the executor's credential table (migration 12). It decides nothing: whether a
 * capability is accepted, what a rotation or a revocation does, is the callers'. Only digests are
 * stored, never a capability.
 */

/** A row as the executor's database holds it (times in ms since the epoch). */
export interface CredentialRecord {
  readonly credentialId: string;
  readonly kind: ExecutorCredentialKind;
  readonly digest: Buffer;
  readonly createdAt: number;
  readonly lastUsedAt: number | null;
  readonly status: 'active' | 'revoked';
  readonly revokedAt: number | null;
  readonly expiresAt: number | null;
}

interface CredentialRow {
  credential_id: string;
  kind: ExecutorCredentialKind;
  digest: Buffer;
  created_at: bigint | number;
  last_used_at: bigint | number | null;
  status: 'active' | 'revoked';
  revoked_at: bigint | number | null;
  expires_at: bigint | number | null;
}

const time = (value: bigint | number | null): number | null => (value === null ? null : Number(value));

function record(row: CredentialRow): CredentialRecord {
  return {
    credentialId: row.credential_id,
    kind: row.kind,
    digest: row.digest,
    createdAt: Number(row.created_at),
    lastUsedAt: time(row.last_used_at),
    status: row.status,
    revokedAt: time(row.revoked_at),
    expiresAt: time(row.expires_at),
  };
}

const COLUMNS = 'credential_id, kind, digest, created_at, last_used_at, status, revoked_at, expires_at';

export function createCredentialStore(db: Database.Database) {
  const statements = {
    byLookup: db.prepare(`SELECT ${COLUMNS} FROM credentials WHERE lookup = ?`),
    byId: db.prepare(`SELECT ${COLUMNS} FROM credentials WHERE credential_id = ?`),
    all: db.prepare(`SELECT ${COLUMNS} FROM credentials ORDER BY created_at, credential_id`),
    ofKind: db.prepare(`SELECT ${COLUMNS} FROM credentials WHERE kind = ? ORDER BY created_at, credential_id`),
    insert: db.prepare("INSERT INTO credentials (credential_id, kind, lookup, digest, created_at, status) VALUES (?, ?, ?, ?, ?, 'active')"),
    touch: db.prepare('UPDATE credentials SET last_used_at = @minute WHERE credential_id = @id AND (last_used_at IS NULL OR last_used_at < @minute)'),
    revoke: db.prepare("UPDATE credentials SET status = 'revoked', revoked_at = ? WHERE credential_id = ? AND status = 'active'"),
    expire: db.prepare("UPDATE credentials SET expires_at = @at WHERE credential_id = @id AND status = 'active' AND (expires_at IS NULL OR expires_at > @at)"),
    supersede: db.prepare(
      "UPDATE credentials SET status = 'revoked', revoked_at = @now WHERE kind = @kind AND status = 'active' AND expires_at IS NULL AND credential_id IS NOT @keep RETURNING credential_id",
    ),
  };
  return {
    /** The row whose digest begins like `lookup` (the caller compares the whole digest). */
    byLookup: (lookup: string): CredentialRecord | undefined => {
      const row = statements.byLookup.get(lookup) as CredentialRow | undefined;
      return row === undefined ? undefined : record(row);
    },
    byId: (credentialId: string): CredentialRecord | undefined => {
      const row = statements.byId.get(credentialId) as CredentialRow | undefined;
      return row === undefined ? undefined : record(row);
    },
    /** Every credential, or those of one kind, oldest first. */
    list: (kind: ExecutorCredentialKind | null): CredentialRecord[] =>
      ((kind === null ? statements.all.all() : statements.ofKind.all(kind)) as CredentialRow[]).map(record),
    insert(credential: { credentialId: string; kind: ExecutorCredentialKind; lookup: string; digest: Buffer; at: number }): void {
      statements.insert.run(credential.credentialId, credential.kind, credential.lookup, credential.digest, credential.at);
    },
    /**
     * Records a use in `minute` (its start), unless one in that minute or later is recorded already
     * (another request, or another process, was first). Without its own fsync: a use lost in a
     * power failure is written again by the next request; the capability's acceptance never
     * depends on it.
     */
    touch(credentialId: string, minute: number): void {
      withoutOwnFsync(db, () => statements.touch.run({ id: credentialId, minute }));
    },
    /** Revokes an active credential; false when it was revoked already. */
    revoke: (credentialId: string, at: number): boolean => statements.revoke.run(at, credentialId).changes > 0,
    /** Sets the end of an active credential's grace; an earlier end already set is kept. */
    expire: (credentialId: string, at: number): boolean => statements.expire.run({ id: credentialId, at }).changes > 0,
    /** Revokes the active credentials of `kind` without a grace other than `keep`; their ids. */
    supersede: (kind: ExecutorCredentialKind, keep: string | null, now: number): string[] =>
      (statements.supersede.all({ kind, keep, now }) as { credential_id: string }[]).map((row) => row.credential_id),
    /** Runs `work` in one IMMEDIATE transaction: it sees and writes the table as no other writer changes it meanwhile. */
    transaction: <T>(work: () => T): T => db.transaction(work).immediate(),
  };
}

export type CredentialStore = ReturnType<typeof createCredentialStore>;
