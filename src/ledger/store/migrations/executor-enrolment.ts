import type { Migration } from '../../../storage/open-database.js';

export const EXECUTOR_ENROLMENT_MIGRATIONS: readonly Migration[] = [
  {
    version: 15,
    name: 'one-time enrolment tokens for executor hosts',
    // Issue 29 (docs/deployment.md "Enrolment"): the ledger host's operator issues a one-time
    // token; an executor host redeems it once for its executor→ledger and agent credentials, so
    // the ledger's admin capability never leaves the ledger host. Only the token's SHA-256 is
    // kept (looked up by its first 8 bytes, compared in full in constant time, as credentials).
    // A token is redeemed at most once: `redeemed_at` is set in the redemption's transaction and
    // a trigger refuses to set it twice or on a revoked token. Issue, revocation and redemption
    // are audited: `audit_events` is rebuilt as migration 14 rebuilt it, its action list extended
    // by `enrolment_issued`, `enrolment_revoked` and `enrolment_redeemed` (ids and counter kept).
    rebuildsTables: true,
    up: `
      CREATE TABLE enrolments (
        enrolment_id TEXT PRIMARY KEY CHECK (enrolment_id GLOB 'enr_*'),
        host_name TEXT NOT NULL CHECK (length(host_name) BETWEEN 1 AND 64),
        agent_name TEXT NOT NULL CHECK (length(agent_name) BETWEEN 1 AND 64),
        token_lookup TEXT NOT NULL UNIQUE CHECK (length(token_lookup) = 16),
        token_digest BLOB NOT NULL CHECK (length(token_digest) = 32),
        issued_by TEXT NOT NULL,
        issued_at INTEGER NOT NULL,
        expires_at INTEGER NOT NULL CHECK (expires_at > issued_at),
        redeemed_at INTEGER,
        revoked_at INTEGER,
        agent_id TEXT REFERENCES agents (agent_id),
        executor_credential_id TEXT REFERENCES credentials (credential_id),
        agent_credential_id TEXT REFERENCES credentials (credential_id),
        CHECK (redeemed_at IS NULL OR revoked_at IS NULL),
        CHECK ((redeemed_at IS NULL) = (executor_credential_id IS NULL))
      );
      CREATE INDEX enrolments_by_time ON enrolments (issued_at);
      CREATE TRIGGER enrolments_redeemed_once BEFORE UPDATE OF redeemed_at, revoked_at ON enrolments
        WHEN OLD.redeemed_at IS NOT NULL OR OLD.revoked_at IS NOT NULL
        BEGIN SELECT RAISE(ABORT, 'an enrolment token is redeemed or revoked once'); END;
      CREATE TRIGGER enrolments_are_kept BEFORE DELETE ON enrolments
        BEGIN SELECT RAISE(ABORT, 'enrolments are never deleted'); END;

      DROP TRIGGER audit_events_are_final;
      DROP TRIGGER audit_events_are_kept;
      CREATE TABLE audit_events_v15 (
        audit_id INTEGER PRIMARY KEY AUTOINCREMENT,
        at INTEGER NOT NULL,
        actor_credential_id TEXT,
        actor_kind TEXT NOT NULL CHECK (actor_kind IN ('admin', 'agent', 'approver', 'executor', 'reconciliation', 'ledger')),
        action TEXT NOT NULL CHECK (action IN ('agent_added', 'agent_suspended', 'agent_resumed', 'policy_changed', 'authorization_approved', 'authorization_denied',
          'reconciliation_resolved', 'credential_registered', 'credential_revoked', 'credential_rotated', 'webhook_added', 'webhook_removed', 'budget_changed',
          'enrolment_issued', 'enrolment_revoked', 'enrolment_redeemed')),
        agent_id TEXT REFERENCES agents (agent_id),
        subject_id TEXT NOT NULL,
        before TEXT CHECK (before IS NULL OR (json_valid(before) AND json_type(before) = 'object')),
        after TEXT CHECK (after IS NULL OR (json_valid(after) AND json_type(after) = 'object')),
        reason TEXT CHECK (reason IS NULL OR length(reason) <= 500),
        CHECK ((actor_kind = 'ledger') = (actor_credential_id IS NULL))
      );
      INSERT INTO audit_events_v15 (audit_id, at, actor_credential_id, actor_kind, action, agent_id, subject_id, before, after, reason)
        SELECT audit_id, at, actor_credential_id, actor_kind, action, agent_id, subject_id, before, after, reason FROM audit_events ORDER BY audit_id;
      DELETE FROM sqlite_sequence WHERE name = 'audit_events_v15';
      INSERT INTO sqlite_sequence (name, seq)
        SELECT 'audit_events_v15', MAX(COALESCE((SELECT seq FROM sqlite_sequence WHERE name = 'audit_events'), 0), COALESCE((SELECT MAX(audit_id) FROM audit_events_v15), 0))
        WHERE EXISTS (SELECT 1 FROM sqlite_sequence WHERE name = 'audit_events') OR EXISTS (SELECT 1 FROM audit_events_v15);
      DROP TABLE audit_events;
      ALTER TABLE audit_events_v15 RENAME TO audit_events;
      CREATE INDEX audit_events_by_agent ON audit_events (agent_id, audit_id);
      CREATE INDEX audit_events_by_time ON audit_events (at);
      CREATE TRIGGER audit_events_are_final BEFORE UPDATE ON audit_events
        BEGIN SELECT RAISE(ABORT, 'audit events are append-only'); END;
      CREATE TRIGGER audit_events_are_kept BEFORE DELETE ON audit_events
        BEGIN SELECT RAISE(ABORT, 'audit events are never deleted'); END;
    `,
  },
];
