import type Database from 'better-sqlite3';
import { capabilityDigest, digestLookup, digestsEqual, MAX_ROTATION_GRACE_SECONDS, type CredentialKind } from '../credentials/capability.js';
import { redactSecretShapes } from '../domain/secret-text.js';
import { conflict, notFound, unprocessable } from './ledger-error.js';
import { immediateTransaction } from './store/immediate-transaction.js';
import { createAuditStore, type AuditActor } from './store/audit-store.js';
import { createCredentialStore, type CredentialFilter, type CredentialLifecycleRow } from './store/credential-store.js';
import type { LedgerCredential } from './wire/answers.js';

/*
 * The credential lifecycle (docs/ledger.md "Credentials"): every capability the ledger accepts
 * has an id, kind, agent, created and last-used time and a status, and can be revoked or rotated.
 * Nothing is cached: each request's capability is looked up in the database, so a revocation
 * holds from the very next request. SQL: store/credential-store.ts.
 */

/** The identity a request authenticated as. */
export interface Principal {
  readonly credential_id: string;
  readonly kind: CredentialKind;
  readonly agent_id: string | null;
  /** The person an (approver) credential belongs to, when it was issued with a name. */
  readonly holder_name: string | null;
}

const MINUTE_MS = 60_000;

const iso = (ms: bigint | number) => new Date(Number(ms)).toISOString();

/** A credential as the API shows it: never its digest, never its lookup. */
export function credentialView(row: CredentialLifecycleRow, now: number): LedgerCredential {
  const refusedFrom = row.revoked_at;
  const status = refusedFrom === null ? 'active' : Number(refusedFrom) > now ? 'expiring' : 'revoked';
  return {
    credential_id: row.credential_id,
    kind: row.kind,
    agent_id: row.agent_id,
    holder_name: row.holder_name === null ? null : redactSecretShapes(row.holder_name),
    status,
    created_at: iso(row.created_at),
    last_used_at: row.last_used_at === null ? null : iso(row.last_used_at),
    expires_at: status === 'expiring' && refusedFrom !== null ? iso(refusedFrom) : null,
    revoked_at: status === 'revoked' && refusedFrom !== null ? iso(refusedFrom) : null,
    lineage: row.lineage,
    rotated_from: row.rotated_from,
    replaced_by: row.replaced_by,
  };
}

/** Whether the row's capability is accepted at `now` (not revoked, or within a rotation's grace). */
const accepted = (row: CredentialLifecycleRow, now: number) => row.revoked_at === null || Number(row.revoked_at) > now;

export interface CredentialRegistrationInput {
  readonly credentialId: string;
  readonly kind: CredentialKind;
  readonly agentId: string | null;
  readonly digest: Buffer;
  readonly holderName: string | null;
  /** Who registers it (the audit trail's actor): the route's principal, or the ledger itself. */
  readonly actor: AuditActor;
}

export interface RotationInput {
  /** The id the new credential gets (the client chooses it, as for a registration). */
  readonly newCredentialId: string;
  /** SHA-256 of the new capability, which the client generated and keeps. */
  readonly digest: Buffer;
  /** How long the old capability keeps working, 0..MAX_ROTATION_GRACE_SECONDS. */
  readonly graceSeconds: number;
}

export interface Revocation {
  readonly credential: LedgerCredential;
  /** False when it was already revoked: nothing changed. */
  readonly changed: boolean;
}

export interface Rotation {
  readonly credential: LedgerCredential;
  readonly replaced: LedgerCredential;
  /** `unchanged`: the same rotation was asked again (its answer lost); nothing changed. */
  readonly outcome: 'created' | 'unchanged';
}

/** How the ledger's admin capability file relates to this database's admin credentials (checked at every start). */
export type AdminFileStanding = 'no_admin' | 'accepted' | 'revoked' | 'foreign';

export type CredentialLifecycle = ReturnType<typeof createCredentialLifecycle>;

export function createCredentialLifecycle({ db, now }: { db: Database.Database; now: () => number }) {
  const store = createCredentialStore(db);
  const audit = createAuditStore(db);
  const immediate = immediateTransaction(db);

  function requireCredential(credentialId: string): CredentialLifecycleRow {
    const row = store.byId(credentialId);
    if (row === undefined) throw notFound();
    return row;
  }

  function requireAgent(agentId: string): void {
    if (db.prepare('SELECT 1 FROM agents WHERE agent_id = ?').get(agentId) === undefined) throw notFound();
  }

  return {
    /**
     * The principal a presented capability belongs to, or null: unknown, or refused since its
     * revocation (or the end of its rotation's grace). Constant-time on the digest. The first use
     * in each minute is recorded (one write per credential per minute, not one per request).
     */
    authenticate(token: string): Principal | null {
      const digest = capabilityDigest(token);
      const row = store.byLookup(digestLookup(digest));
      const at = now();
      if (row === undefined || !digestsEqual(row.digest, digest) || !accepted(row, at)) return null;
      const minute = Math.floor(at / MINUTE_MS) * MINUTE_MS;
      if (row.last_used_at === null || Number(row.last_used_at) < minute) {
        // Best effort: a database busy past its timeout delays the record of a use, never the request.
        try {
          store.touch(row.credential_id, minute);
        } catch {
          // The next request of this minute records it.
        }
      }
      return { credential_id: row.credential_id, kind: row.kind, agent_id: row.agent_id, holder_name: row.holder_name };
    },

    /**
     * Registers a credential by the digest of a capability the caller generated and keeps.
     * Idempotent: the same id with the same kind, agent, name and digest is `unchanged`, and so
     * is the id of a line that was rotated, asked with the digest of the line's current
     * credential (so `bootstrap-managed` and the launcher's start stay idempotent after a
     * rotation). A revoked credential is never registered again, and any other difference is a
     * conflict (fail closed), never an overwrite.
     */
    register(input: CredentialRegistrationInput): { outcome: 'created' | 'unchanged'; credential: LedgerCredential } {
      return immediate(() => {
        const at = now();
        if ((input.kind === 'agent') !== (input.agentId !== null)) throw unprocessable('invalid_credential', 'agent_id_required_for_agent_kind_only', ['agent_id']);
        if (input.agentId !== null) requireAgent(input.agentId);
        const lookup = digestLookup(input.digest);
        const existing = store.byId(input.credentialId);
        if (existing !== undefined) {
          const same = existing.kind === input.kind && existing.agent_id === input.agentId && digestsEqual(existing.digest, input.digest);
          if (same && existing.holder_name === input.holderName) {
            if (!accepted(existing, at)) throw conflict('credential_revoked');
            return { outcome: 'unchanged', credential: credentialView(existing, at) };
          }
          const current = store.acceptedInLineage(existing.lineage, lookup, at);
          if (current !== undefined && digestsEqual(current.digest, input.digest) && current.kind === input.kind && current.agent_id === input.agentId) {
            return { outcome: 'unchanged', credential: credentialView(current, at) };
          }
          throw conflict('credential_exists');
        }
        if (store.byLookup(lookup) !== undefined) throw conflict('credential_exists');
        store.insert({ ...input, lookup, at, lineage: input.credentialId, rotatedFrom: null });
        const credential = { credential_id: input.credentialId, kind: input.kind, agent_id: input.agentId };
        audit.credentialChanged({ action: 'credential_registered', actor: input.actor, credential, at, after: input.holderName === null ? {} : { holder_name: input.holderName } });
        return { outcome: 'created', credential: credentialView(requireCredential(input.credentialId), at) };
      });
    },

    /** Every credential, oldest first, optionally of one kind or one agent. */
    list(filter: CredentialFilter): LedgerCredential[] {
      const at = now();
      return store.list(filter).map((row) => credentialView(row, at));
    },

    show(credentialId: string): LedgerCredential {
      return credentialView(requireCredential(credentialId), now());
    },

    /**
     * Refuses the credential from now on (a rotation's grace ends now too). Revoking a revoked
     * credential changes nothing (`changed: false`). The last admin credential that is not
     * revoked is never revoked: nobody could govern the ledger again (`last_admin_credential`).
     */
    revoke(credentialId: string, actor: AuditActor): Revocation {
      return immediate(() => {
        const at = now();
        const row = requireCredential(credentialId);
        if (!accepted(row, at)) return { credential: credentialView(row, at), changed: false };
        if (row.kind === 'admin' && row.revoked_at === null && store.unrevokedOfKind('admin', credentialId) === 0) throw conflict('last_admin_credential');
        store.revoke(credentialId, at);
        audit.credentialChanged({
          action: 'credential_revoked',
          actor,
          credential: row,
          at,
          before: { status: credentialView(row, at).status },
          after: { status: 'revoked' },
        });
        return { credential: credentialView(requireCredential(credentialId), at), changed: true };
      });
    },

    /**
     * Replaces a credential by a new one of the same kind, agent, holder and line, in one
     * transaction: the new capability works at once, the old one until the grace ends (0: at
     * once refused). Asking the same rotation again (same new id and digest) is `unchanged`.
     */
    rotate(credentialId: string, input: RotationInput, actor: AuditActor): Rotation {
      if (!Number.isInteger(input.graceSeconds) || input.graceSeconds < 0 || input.graceSeconds > MAX_ROTATION_GRACE_SECONDS) {
        throw unprocessable('invalid_request', 'grace_out_of_range', ['grace_seconds']);
      }
      return immediate(() => {
        const at = now();
        const old = requireCredential(credentialId);
        const lookup = digestLookup(input.digest);
        const replay = store.byId(input.newCredentialId);
        if (replay !== undefined) {
          if (replay.rotated_from === credentialId && digestsEqual(replay.digest, input.digest)) {
            return { credential: credentialView(replay, at), replaced: credentialView(old, at), outcome: 'unchanged' };
          }
          throw conflict('credential_exists', ['new_credential_id']);
        }
        if (!accepted(old, at)) throw conflict('credential_revoked');
        if (old.replaced_by !== null) throw conflict('credential_already_rotated');
        if (store.byLookup(lookup) !== undefined) throw conflict('credential_exists', ['digest_sha256']);
        store.insert({
          credentialId: input.newCredentialId,
          kind: old.kind,
          agentId: old.agent_id,
          lookup,
          digest: input.digest,
          at,
          holderName: old.holder_name,
          lineage: old.lineage,
          rotatedFrom: credentialId,
        });
        audit.credentialChanged({
          action: 'credential_registered',
          actor,
          credential: { credential_id: input.newCredentialId, kind: old.kind, agent_id: old.agent_id },
          at,
          after: { rotated_from: credentialId },
        });
        const refusedFrom = at + input.graceSeconds * 1000;
        store.replace(credentialId, input.newCredentialId, refusedFrom);
        audit.credentialChanged({
          action: 'credential_rotated',
          actor,
          credential: old,
          at,
          before: { status: 'active' },
          after: { replaced_by: input.newCredentialId, grace_seconds: String(input.graceSeconds), refused_from: new Date(refusedFrom).toISOString() },
        });
        return { credential: credentialView(requireCredential(input.newCredentialId), at), replaced: credentialView(requireCredential(credentialId), at), outcome: 'created' };
      });
    },

    /** How the admin capability file (its digest) stands against this database's admin credentials. */
    adminFileStanding(digest: Buffer): AdminFileStanding {
      const admins = store.ofKind('admin');
      if (admins.length === 0) return 'no_admin';
      const match = admins.find((row) => digestsEqual(row.digest, digest));
      if (match === undefined) return 'foreign';
      return accepted(match, now()) ? 'accepted' : 'revoked';
    },
  };
}
