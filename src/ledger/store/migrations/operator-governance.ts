import type { Migration } from '../../../storage/open-database.js';

/** The ledger's migrations, Versions 7-9: the credential lifecycle, the audit trail, idempotency keys (issue 27). Applied in order with the others (migrations.ts). */
export const OPERATOR_GOVERNANCE_MIGRATIONS: readonly Migration[] = [
  {
    version: 7,
    name: 'credentials have a lifecycle',
    // Every credential the ledger accepts can be listed, revoked and rotated (docs/ledger.md
    // "Credentials"). `revoked_at` is the time from which it is refused: null while it is active,
    // in the future while a rotation's grace runs (both the old and the new capability work), in
    // the past once revoked. A rotation keeps the credential's `lineage` (the id of the first
    // credential of the line), so the executor's claims made under an older credential of its
    // line stay its own, and registering the line's first id again with the current capability is
    // `unchanged` (bootstrap stays idempotent after a rotation). `last_used_at` is kept to the
    // minute. `holder_name` is the person an approver credential belongs to (named approvers), and
    // an authorization keeps the name of the person who decided it (`decided_by_name`).
    // The credentials table is rebuilt to hold the new constraints; the secret side of a row
    // (digest, lookup, kind, agent) can never change and no credential row is ever deleted.
    rebuildsTables: true,
    up: `
      CREATE TABLE credentials_v7 (
        credential_id TEXT PRIMARY KEY,
        kind TEXT NOT NULL CHECK (kind IN ('admin', 'agent', 'approver', 'executor', 'reconciliation')),
        agent_id TEXT REFERENCES agents (agent_id),
        lookup TEXT NOT NULL UNIQUE,
        digest BLOB NOT NULL,
        created_at INTEGER NOT NULL,
        holder_name TEXT,
        lineage TEXT NOT NULL,
        rotated_from TEXT,
        replaced_by TEXT,
        last_used_at INTEGER,
        revoked_at INTEGER,
        CHECK ((kind = 'agent') = (agent_id IS NOT NULL)),
        CHECK (replaced_by IS NULL OR revoked_at IS NOT NULL)
      );
      INSERT INTO credentials_v7 (credential_id, kind, agent_id, lookup, digest, created_at, holder_name, lineage, rotated_from, replaced_by, last_used_at, revoked_at)
        SELECT credential_id, kind, agent_id, lookup, digest, created_at, NULL, credential_id, NULL, NULL, NULL, NULL FROM credentials;
      DROP TABLE credentials;
      ALTER TABLE credentials_v7 RENAME TO credentials;
      CREATE INDEX credentials_by_lineage ON credentials (lineage);
      CREATE TRIGGER credential_secrets_are_fixed BEFORE UPDATE OF credential_id, kind, agent_id, lookup, digest, created_at, lineage, rotated_from ON credentials
        BEGIN SELECT RAISE(ABORT, 'a credential''s identity never changes'); END;
      CREATE TRIGGER credentials_are_kept BEFORE DELETE ON credentials
        BEGIN SELECT RAISE(ABORT, 'credentials are revoked, never deleted'); END;

      ALTER TABLE authorizations ADD COLUMN decided_by_name TEXT;
    `,
  },
  {
    version: 8,
    name: 'operator actions are audited',
    // The audit trail (docs/ledger.md "Audit trail", store/audit-store.ts): one row per operator
    // action, written in the transaction of the change it records. Who (the credential and its
    // kind, or `ledger` for the ledger's own acts: the breaker's suspension, the default policy
    // applied at start, its own admin credential), what, when, the state before and after (JSON
    // objects of ledger-made values, never free text) and the operator's reason (redacted and
    // bounded before it is written). Append-only: triggers refuse every UPDATE and DELETE.
    // `audit_id` only grows (AUTOINCREMENT: an id is never reused), so a reader pages with it.
    // Nothing is backfilled: what happened before this migration was never recorded.
    up: `
      CREATE TABLE audit_events (
        audit_id INTEGER PRIMARY KEY AUTOINCREMENT,
        at INTEGER NOT NULL,
        actor_credential_id TEXT,
        actor_kind TEXT NOT NULL CHECK (actor_kind IN ('admin', 'agent', 'approver', 'executor', 'reconciliation', 'ledger')),
        action TEXT NOT NULL CHECK (action IN ('agent_added', 'agent_suspended', 'agent_resumed', 'policy_changed', 'authorization_approved', 'authorization_denied',
          'reconciliation_resolved', 'credential_registered', 'credential_revoked', 'credential_rotated')),
        agent_id TEXT REFERENCES agents (agent_id),
        subject_id TEXT NOT NULL,
        before TEXT CHECK (before IS NULL OR (json_valid(before) AND json_type(before) = 'object')),
        after TEXT CHECK (after IS NULL OR (json_valid(after) AND json_type(after) = 'object')),
        reason TEXT CHECK (reason IS NULL OR length(reason) <= 500),
        CHECK ((actor_kind = 'ledger') = (actor_credential_id IS NULL))
      );
      CREATE INDEX audit_events_by_agent ON audit_events (agent_id, audit_id);
      CREATE INDEX audit_events_by_time ON audit_events (at);
      CREATE TRIGGER audit_events_are_final BEFORE UPDATE ON audit_events
        BEGIN SELECT RAISE(ABORT, 'audit events are append-only'); END;
      CREATE TRIGGER audit_events_are_kept BEFORE DELETE ON audit_events
        BEGIN SELECT RAISE(ABORT, 'audit events are never deleted'); END;
    `,
  },
  {
    version: 9,
    name: 'spend requests carry an idempotency key',
    // An agent may send `Idempotency-Key` with a spend request (docs/ledger.md "Idempotent
    // requests"): the authorization keeps the key and the SHA-256 fingerprint of the request it
    // opened, both or neither. While that authorization is open — requested, or approved and
    // unclaimed — the key names it and no other of the agent's: the partial UNIQUE index makes
    // "one open authorization per key" a property of the store. Once it is claimed or final it
    // leaves the index and the key is free again. Existing rows: no key.
    up: `
      ALTER TABLE authorizations ADD COLUMN idempotency_key TEXT;
      ALTER TABLE authorizations ADD COLUMN request_fingerprint TEXT CHECK ((request_fingerprint IS NULL) = (idempotency_key IS NULL));
      CREATE UNIQUE INDEX one_open_authorization_per_idempotency_key ON authorizations (agent_id, idempotency_key)
        WHERE status IN ('requested', 'approved') AND idempotency_key IS NOT NULL;
    `,
  },
];
