import type Database from 'better-sqlite3';
import type { CredentialKind } from '../../credentials/capability.js';

/*
 * The ledger's SQL for the credential lifecycle (migration 7; use cases:
 * src/ledger/credential-lifecycle.ts): rows by id, by lookup and by filter, revocation, rotation
 * and the minute-precision last use. It decides nothing: what is accepted, refused or a conflict
 * is the use cases'. A credential is accepted while `revoked_at` is null or still in the future
 * (a rotation's grace).
 */

export interface CredentialLifecycleRow {
  credential_id: string;
  kind: CredentialKind;
  agent_id: string | null;
  digest: Buffer;
  created_at: bigint;
  holder_name: string | null;
  lineage: string;
  rotated_from: string | null;
  replaced_by: string | null;
  last_used_at: bigint | null;
  revoked_at: bigint | null;
}

export interface CredentialFilter {
  readonly kind: CredentialKind | null;
  readonly agentId: string | null;
}

const COLUMNS = 'credential_id, kind, agent_id, digest, created_at, holder_name, lineage, rotated_from, replaced_by, last_used_at, revoked_at';

export type CredentialStore = ReturnType<typeof createCredentialStore>;

export function createCredentialStore(db: Database.Database) {
  // Prepared once, as in ledger-store.ts.
  const statements = {
    byId: db.prepare(`SELECT ${COLUMNS} FROM credentials WHERE credential_id = ?`),
    byLookup: db.prepare(`SELECT ${COLUMNS} FROM credentials WHERE lookup = ?`),
    list: db.prepare(
      `SELECT ${COLUMNS} FROM credentials
       WHERE (@kind IS NULL OR kind = @kind) AND (@agent_id IS NULL OR agent_id = @agent_id)
       ORDER BY created_at, credential_id`,
    ),
    insert: db.prepare(
      `INSERT INTO credentials (credential_id, kind, agent_id, lookup, digest, created_at, holder_name, lineage, rotated_from)
       VALUES (@credential_id, @kind, @agent_id, @lookup, @digest, @at, @holder_name, @lineage, @rotated_from)`,
    ),
    revoke: db.prepare('UPDATE credentials SET revoked_at = @at WHERE credential_id = @credential_id'),
    replace: db.prepare('UPDATE credentials SET revoked_at = @at, replaced_by = @replaced_by WHERE credential_id = @credential_id'),
    touch: db.prepare('UPDATE credentials SET last_used_at = @at WHERE credential_id = @credential_id AND (last_used_at IS NULL OR last_used_at < @at)'),
    acceptedOfKind: db.prepare(
      'SELECT COUNT(*) AS count FROM credentials WHERE kind = @kind AND credential_id <> @except AND (revoked_at IS NULL OR revoked_at > @now)',
    ),
    unrevokedOfKind: db.prepare('SELECT COUNT(*) AS count FROM credentials WHERE kind = @kind AND credential_id <> @except AND revoked_at IS NULL'),
    acceptedInLineage: db.prepare(
      `SELECT ${COLUMNS} FROM credentials WHERE lineage = @lineage AND lookup = @lookup AND (revoked_at IS NULL OR revoked_at > @now)`,
    ),
    kindDigests: db.prepare(`SELECT ${COLUMNS} FROM credentials WHERE kind = ? ORDER BY created_at`),
  };

  return {
    byId: (credentialId: string) => statements.byId.get(credentialId) as CredentialLifecycleRow | undefined,
    byLookup: (lookup: string) => statements.byLookup.get(lookup) as CredentialLifecycleRow | undefined,
    list: (filter: CredentialFilter) => statements.list.all({ kind: filter.kind, agent_id: filter.agentId }) as CredentialLifecycleRow[],
    /** Every credential of `kind`, oldest first (the ledger's own admin check at start). */
    ofKind: (kind: CredentialKind) => statements.kindDigests.all(kind) as CredentialLifecycleRow[],
    insert(row: {
      credentialId: string;
      kind: CredentialKind;
      agentId: string | null;
      lookup: string;
      digest: Buffer;
      at: number;
      holderName: string | null;
      lineage: string;
      rotatedFrom: string | null;
    }): void {
      statements.insert.run({
        credential_id: row.credentialId,
        kind: row.kind,
        agent_id: row.agentId,
        lookup: row.lookup,
        digest: row.digest,
        at: row.at,
        holder_name: row.holderName,
        lineage: row.lineage,
        rotated_from: row.rotatedFrom,
      });
    },
    /** Refused from `at` on. */
    revoke(credentialId: string, at: number): void {
      statements.revoke.run({ credential_id: credentialId, at });
    },
    /** Replaced by `replacedBy`, and refused from `at` on (the end of the rotation's grace). */
    replace(credentialId: string, replacedBy: string, at: number): void {
      statements.replace.run({ credential_id: credentialId, replaced_by: replacedBy, at });
    },
    /** Records a use at `at` (already rounded to the minute); a no-op when a use at that minute or later is recorded. */
    touch(credentialId: string, at: number): void {
      statements.touch.run({ credential_id: credentialId, at });
    },
    /** How many credentials of `kind` other than `except` are accepted at `now` (a rotation's grace included). */
    acceptedOfKind: (kind: CredentialKind, except: string, now: number) =>
      Number((statements.acceptedOfKind.get({ kind, except, now }) as { count: bigint }).count),
    /** How many credentials of `kind` other than `except` are not revoked, nor due to be (no grace running). */
    unrevokedOfKind: (kind: CredentialKind, except: string) => Number((statements.unrevokedOfKind.get({ kind, except }) as { count: bigint }).count),
    /** The credential of `lineage` with this lookup that is accepted at `now`, if any. */
    acceptedInLineage: (lineage: string, lookup: string, now: number) =>
      statements.acceptedInLineage.get({ lineage, lookup, now }) as CredentialLifecycleRow | undefined,
  };
}
