import type { Migration } from '../../../storage/open-database.js';

/** The ledger's migrations, Versions 1-6: the owner, agents, policies, authorizations, settle XOR release, claims, suspension and velocity limits. Applied in order with the others (migrations.ts). */
export const MONEY_AND_AUTHORIZATION_MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: 'initial',
    up: `
      CREATE TABLE owner (
        account_id TEXT PRIMARY KEY,
        created_at INTEGER NOT NULL
      );

      CREATE TABLE agents (
        agent_id TEXT PRIMARY KEY,
        name TEXT NOT NULL UNIQUE,
        status TEXT NOT NULL CHECK (status IN ('active', 'disabled')),
        created_at INTEGER NOT NULL
      );

      CREATE TABLE policies (
        agent_id TEXT PRIMARY KEY REFERENCES agents (agent_id),
        per_authorization_cap_units INTEGER NOT NULL CHECK (per_authorization_cap_units > 0),
        daily_cap_units INTEGER NOT NULL CHECK (daily_cap_units >= per_authorization_cap_units),
        approval_threshold_units INTEGER NOT NULL CHECK (approval_threshold_units >= 0),
        units_scale INTEGER NOT NULL CHECK (units_scale = 6),
        currency TEXT NOT NULL,
        version INTEGER NOT NULL,
        updated_at INTEGER NOT NULL
      );

      CREATE TABLE credentials (
        credential_id TEXT PRIMARY KEY,
        kind TEXT NOT NULL CHECK (kind IN ('admin', 'agent', 'approver', 'executor', 'reconciliation')),
        agent_id TEXT REFERENCES agents (agent_id),
        lookup TEXT NOT NULL UNIQUE,
        digest BLOB NOT NULL,
        created_at INTEGER NOT NULL,
        CHECK ((kind = 'agent') = (agent_id IS NOT NULL))
      );

      CREATE TABLE authorizations (
        token_id TEXT PRIMARY KEY,
        account_id TEXT NOT NULL REFERENCES owner (account_id),
        agent_id TEXT NOT NULL REFERENCES agents (agent_id),
        amount_units INTEGER NOT NULL CHECK (amount_units > 0),
        units_scale INTEGER NOT NULL CHECK (units_scale = 6),
        currency TEXT NOT NULL,
        amount_cents INTEGER NOT NULL CHECK (amount_cents * 10000 >= amount_units),
        status TEXT NOT NULL CHECK (status IN ('requested', 'approved', 'denied', 'claimed', 'settled', 'released', 'expired')),
        purpose TEXT,
        decided_by TEXT,
        decision_reason TEXT,
        execution_id TEXT,
        created_at INTEGER NOT NULL,
        decided_at INTEGER,
        claimed_at INTEGER,
        closed_at INTEGER,
        expires_at INTEGER NOT NULL,
        CHECK ((status IN ('claimed', 'settled', 'released')) <= (execution_id IS NOT NULL))
      );
      CREATE INDEX authorizations_by_agent ON authorizations (agent_id, created_at);
      CREATE INDEX authorizations_by_status ON authorizations (status, created_at);

      CREATE TABLE settlements (
        settlement_id TEXT PRIMARY KEY,
        token_id TEXT NOT NULL UNIQUE REFERENCES authorizations (token_id),
        receipt_id TEXT NOT NULL UNIQUE,
        execution_id TEXT NOT NULL,
        receipt_shape TEXT NOT NULL CHECK (receipt_shape IN ('precise', 'legacy_cents')),
        amount_units INTEGER NOT NULL CHECK (amount_units > 0),
        units_scale INTEGER NOT NULL CHECK (units_scale = 6),
        currency TEXT NOT NULL,
        amount_cents INTEGER NOT NULL CHECK (amount_cents * 10000 >= amount_units),
        provider_request_id TEXT,
        price_model_snapshot TEXT NOT NULL,
        receipt_fingerprint TEXT NOT NULL,
        created_at INTEGER NOT NULL
      );

      CREATE TABLE releases (
        release_id TEXT PRIMARY KEY,
        token_id TEXT NOT NULL UNIQUE REFERENCES authorizations (token_id),
        execution_id TEXT,
        reason TEXT NOT NULL,
        created_at INTEGER NOT NULL
      );

      CREATE TRIGGER settle_never_after_release BEFORE INSERT ON settlements
        WHEN EXISTS (SELECT 1 FROM releases WHERE token_id = NEW.token_id)
        BEGIN SELECT RAISE(ABORT, 'authorization already released'); END;
      CREATE TRIGGER release_never_after_settle BEFORE INSERT ON releases
        WHEN EXISTS (SELECT 1 FROM settlements WHERE token_id = NEW.token_id)
        BEGIN SELECT RAISE(ABORT, 'authorization already settled'); END;
      CREATE TRIGGER settlements_are_final BEFORE UPDATE ON settlements
        BEGIN SELECT RAISE(ABORT, 'settlements are immutable'); END;
      CREATE TRIGGER settlements_are_kept BEFORE DELETE ON settlements
        BEGIN SELECT RAISE(ABORT, 'settlements are never deleted'); END;

      CREATE TABLE reconciliation_records (
        record_id TEXT PRIMARY KEY,
        token_id TEXT NOT NULL REFERENCES authorizations (token_id),
        execution_id TEXT NOT NULL,
        reason TEXT NOT NULL,
        evidence TEXT NOT NULL,
        status TEXT NOT NULL CHECK (status IN ('open', 'resolved')),
        resolution TEXT CHECK (resolution IN ('settled', 'released')),
        resolved_by TEXT,
        resolution_note TEXT,
        resolved_at INTEGER,
        created_at INTEGER NOT NULL,
        CHECK ((status = 'resolved') = (resolution IS NOT NULL))
      );
      CREATE UNIQUE INDEX one_open_record_per_authorization ON reconciliation_records (token_id) WHERE status = 'open';
    `,
  },
  {
    version: 2,
    name: 'policies follow the default until set',
    // An agent's policy is either the configured default (it follows every change of
    // [ledger.default_policy] at the next ledger start) or the operator's own, set with
    // `ledger policy set`. Every existing policy still at version 1 was never set: it was copied
    // from the default when the agent was added, so it follows the default from now on.
    up: `
      ALTER TABLE policies ADD COLUMN follows_default INTEGER NOT NULL DEFAULT 0 CHECK (follows_default IN (0, 1));
      UPDATE policies SET follows_default = 1 WHERE version = 1;
    `,
  },
  {
    version: 3,
    name: 'authorizations keep the policy that decided them',
    // The limits and the policy version a request was decided under, so an approver sees the
    // policy that asked for their approval even after the policy changed. Older rows: null.
    up: `
      ALTER TABLE authorizations ADD COLUMN policy_version INTEGER;
      ALTER TABLE authorizations ADD COLUMN policy_per_authorization_cap_units INTEGER;
      ALTER TABLE authorizations ADD COLUMN policy_daily_cap_units INTEGER;
      ALTER TABLE authorizations ADD COLUMN policy_approval_threshold_units INTEGER;
    `,
  },
  {
    version: 4,
    name: 'claims keep the credential that claimed them',
    // The executor credential that claimed an authorization, so an executor can find (and
    // release) its own claims that never became an execution. Claims made before this column:
    // with exactly one executor credential registered they can only be its own and are attributed
    // to it; with several, nobody can tell, and they stay unattributed for a human (the ledger
    // logs how many at start; docs/ledger.md). The index serves the executor's claim listing.
    up: `
      ALTER TABLE authorizations ADD COLUMN claimed_by TEXT;
      UPDATE authorizations SET claimed_by = (SELECT credential_id FROM credentials WHERE kind = 'executor')
        WHERE execution_id IS NOT NULL AND (SELECT COUNT(*) FROM credentials WHERE kind = 'executor') = 1;
      CREATE INDEX authorizations_claims_by_credential ON authorizations (claimed_by, token_id) WHERE status = 'claimed';
    `,
  },
  {
    version: 5,
    name: 'agents can be suspended; unclaimed authorizations can be cancelled',
    // An operator suspends an agent (docs/ledger.md "Suspending an agent"): its status becomes
    // `suspended` with the time and the operator's reason, and its requested and approved
    // authorizations nobody claimed become `cancelled` (final, the hold freed). Changing a CHECK
    // constraint means rebuilding the table (SQLite has no ALTER for it): the agents and the
    // authorizations are copied into tables of the new shape, column for column. The store itself
    // keeps a cancelled authorization unclaimed (never an execution id) and final (a trigger).
    // `disabled`, the old schema's other agent status, was never written by lexec; a row holding it
    // all the same becomes a suspension from now, and its unclaimed authorizations are cancelled.
    rebuildsTables: true,
    up: `
      CREATE TABLE agents_v5 (
        agent_id TEXT PRIMARY KEY,
        name TEXT NOT NULL UNIQUE,
        status TEXT NOT NULL CHECK (status IN ('active', 'suspended')),
        created_at INTEGER NOT NULL,
        suspended_at INTEGER,
        suspension_reason TEXT,
        CHECK ((status = 'suspended') = (suspended_at IS NOT NULL)),
        CHECK (status = 'suspended' OR suspension_reason IS NULL)
      );
      INSERT INTO agents_v5 (agent_id, name, status, created_at, suspended_at, suspension_reason)
        SELECT agent_id, name, CASE status WHEN 'active' THEN 'active' ELSE 'suspended' END, created_at,
          CASE status WHEN 'active' THEN NULL ELSE CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER) END, NULL
        FROM agents;
      DROP TABLE agents;
      ALTER TABLE agents_v5 RENAME TO agents;

      CREATE TABLE authorizations_v5 (
        token_id TEXT PRIMARY KEY,
        account_id TEXT NOT NULL REFERENCES owner (account_id),
        agent_id TEXT NOT NULL REFERENCES agents (agent_id),
        amount_units INTEGER NOT NULL CHECK (amount_units > 0),
        units_scale INTEGER NOT NULL CHECK (units_scale = 6),
        currency TEXT NOT NULL,
        amount_cents INTEGER NOT NULL CHECK (amount_cents * 10000 >= amount_units),
        status TEXT NOT NULL CHECK (status IN ('requested', 'approved', 'denied', 'claimed', 'settled', 'released', 'expired', 'cancelled')),
        purpose TEXT,
        decided_by TEXT,
        decision_reason TEXT,
        execution_id TEXT,
        created_at INTEGER NOT NULL,
        decided_at INTEGER,
        claimed_at INTEGER,
        closed_at INTEGER,
        expires_at INTEGER NOT NULL,
        policy_version INTEGER,
        policy_per_authorization_cap_units INTEGER,
        policy_daily_cap_units INTEGER,
        policy_approval_threshold_units INTEGER,
        claimed_by TEXT,
        cancellation_reason TEXT,
        CHECK ((status IN ('claimed', 'settled', 'released')) <= (execution_id IS NOT NULL)),
        CHECK ((status = 'cancelled') = (cancellation_reason IS NOT NULL)),
        CHECK (status <> 'cancelled' OR execution_id IS NULL)
      );
      INSERT INTO authorizations_v5 (token_id, account_id, agent_id, amount_units, units_scale, currency, amount_cents, status, purpose,
          decided_by, decision_reason, execution_id, created_at, decided_at, claimed_at, closed_at, expires_at,
          policy_version, policy_per_authorization_cap_units, policy_daily_cap_units, policy_approval_threshold_units, claimed_by, cancellation_reason)
        SELECT token_id, account_id, agent_id, amount_units, units_scale, currency, amount_cents, status, purpose,
          decided_by, decision_reason, execution_id, created_at, decided_at, claimed_at, closed_at, expires_at,
          policy_version, policy_per_authorization_cap_units, policy_daily_cap_units, policy_approval_threshold_units, claimed_by, NULL
        FROM authorizations;
      DROP TABLE authorizations;
      ALTER TABLE authorizations_v5 RENAME TO authorizations;
      CREATE INDEX authorizations_by_agent ON authorizations (agent_id, created_at);
      CREATE INDEX authorizations_by_status ON authorizations (status, created_at);
      CREATE INDEX authorizations_claims_by_credential ON authorizations (claimed_by, token_id) WHERE status = 'claimed';
      CREATE TRIGGER cancellations_are_final BEFORE UPDATE ON authorizations
        WHEN OLD.status = 'cancelled' AND NEW.status <> 'cancelled'
        BEGIN SELECT RAISE(ABORT, 'cancelled authorizations are final'); END;

      UPDATE authorizations SET status = 'cancelled', cancellation_reason = 'agent_suspended', closed_at = CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)
        WHERE status IN ('requested', 'approved') AND execution_id IS NULL
          AND agent_id IN (SELECT agent_id FROM agents WHERE status = 'suspended');
    `,
  },
  {
    version: 6,
    name: 'velocity limits and the runaway-loop breaker',
    // A policy may cap how many requests its agent makes per minute and per hour, and suspend it
    // after N velocity refusals in the rolling hour (docs/ledger.md "Velocity limits"); null: not
    // set, as every existing policy. An agent with a limit has each of its requests logged (time,
    // and whether velocity refused it) in `agent_requests`, pruned past an hour: refused requests
    // count too. `suspended_by` tells an operator's suspension from the breaker's; every existing
    // suspension is an operator's.
    up: `
      ALTER TABLE policies ADD COLUMN max_requests_per_minute INTEGER CHECK (max_requests_per_minute IS NULL OR max_requests_per_minute > 0);
      ALTER TABLE policies ADD COLUMN max_requests_per_hour INTEGER CHECK (max_requests_per_hour IS NULL OR max_requests_per_hour > 0);
      ALTER TABLE policies ADD COLUMN suspend_after_velocity_refusals INTEGER
        CHECK (suspend_after_velocity_refusals IS NULL OR (suspend_after_velocity_refusals > 0 AND (max_requests_per_minute IS NOT NULL OR max_requests_per_hour IS NOT NULL)));

      ALTER TABLE agents ADD COLUMN suspended_by TEXT CHECK (suspended_by IS NULL OR (suspended_by IN ('operator', 'velocity_breaker') AND status = 'suspended'));
      UPDATE agents SET suspended_by = 'operator' WHERE status = 'suspended';

      CREATE TABLE agent_requests (
        agent_id TEXT NOT NULL REFERENCES agents (agent_id),
        requested_at INTEGER NOT NULL,
        velocity_refused INTEGER NOT NULL CHECK (velocity_refused IN (0, 1))
      );
      CREATE INDEX agent_requests_by_agent ON agent_requests (agent_id, requested_at);
      CREATE INDEX agent_velocity_refusals ON agent_requests (agent_id, requested_at) WHERE velocity_refused = 1;
    `,
  },
];
