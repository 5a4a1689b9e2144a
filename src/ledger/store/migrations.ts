import type { Migration } from '../../storage/open-database.js';

/*
 * The ledger's schema history. Times are integer milliseconds since the epoch; amounts are
 * integer micro-units (`*_units`, `units_scale` 6) with whole-cent projections rounded up.
 * Triggers make settle XOR release a property of the store itself, not only of the code.
 */
export const LEDGER_MIGRATIONS: readonly Migration[] = [
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
  {
    version: 10,
    name: 'spend requests name what they pay for; the ledger keeps its events',
    // A request may name the executor target and the prompt it pays for (docs/ledger.md): the
    // target for budgets per target and the claim's check, the prompt for whoever approves it.
    // `client_seen_at` is when the agent last asked after its request (a client is still waiting).
    // `events` is the outbox (store/event-store.ts): one row per change the ledger records,
    // written in that change's transaction, append-only (triggers), `event_id` only grows
    // (AUTOINCREMENT) so a reader continues after the last id it saw. No prompt, no free text:
    // `details` holds ledger-made values. Nothing is backfilled.
    up: `
      ALTER TABLE authorizations ADD COLUMN target_id TEXT CHECK (target_id IS NULL OR length(target_id) BETWEEN 1 AND 200);
      ALTER TABLE authorizations ADD COLUMN prompt TEXT;
      ALTER TABLE authorizations ADD COLUMN client_seen_at INTEGER;

      CREATE TABLE events (
        event_id INTEGER PRIMARY KEY AUTOINCREMENT,
        at INTEGER NOT NULL,
        type TEXT NOT NULL,
        agent_id TEXT REFERENCES agents (agent_id),
        target_id TEXT,
        token_id TEXT,
        amount_units INTEGER CHECK (amount_units IS NULL OR amount_units >= 0),
        details TEXT NOT NULL CHECK (json_valid(details) AND json_type(details) = 'object')
      );
      CREATE INDEX events_by_agent ON events (agent_id, event_id);
      CREATE INDEX events_by_time ON events (at);
      CREATE TRIGGER events_are_final BEFORE UPDATE ON events
        BEGIN SELECT RAISE(ABORT, 'events are append-only'); END;
      CREATE TRIGGER events_are_kept BEFORE DELETE ON events
        BEGIN SELECT RAISE(ABORT, 'events are never deleted'); END;
    `,
  },
  {
    version: 11,
    name: 'calendar budgets, target allow-lists and their alerts',
    // Budgets (docs/ledger.md "Budgets"): an agent's policy may set a budget per calendar day,
    // ISO week and month of the installation's time zone (micro-units; null: none), the alert
    // percentages of its budgets (a JSON array of whole numbers 1-100; null: 50, 80, 100) and an
    // allow-list of targets (a JSON array of {target_id, month_cap_units}; null: any target).
    // `installation_budget` is the one installation-wide budget across all agents, versioned like
    // a policy (one row, none set at first). `budget_alerts` keeps every alert percentage a
    // budget's committed amount has crossed in a period: its primary key makes the ledger write
    // at most one `budget.threshold_crossed` event per budget, period and percentage.
    // The index by time serves the installation's budgets (every agent's authorizations in a
    // period); the one by agent and target the caps per target.
    up: `
      ALTER TABLE policies ADD COLUMN day_budget_units INTEGER CHECK (day_budget_units IS NULL OR day_budget_units > 0);
      ALTER TABLE policies ADD COLUMN week_budget_units INTEGER CHECK (week_budget_units IS NULL OR week_budget_units > 0);
      ALTER TABLE policies ADD COLUMN month_budget_units INTEGER CHECK (month_budget_units IS NULL OR month_budget_units > 0);
      ALTER TABLE policies ADD COLUMN budget_alert_percentages TEXT
        CHECK (budget_alert_percentages IS NULL OR (json_valid(budget_alert_percentages) AND json_type(budget_alert_percentages) = 'array'));
      ALTER TABLE policies ADD COLUMN targets TEXT CHECK (targets IS NULL OR (json_valid(targets) AND json_type(targets) = 'array'));

      CREATE TABLE installation_budget (
        singleton INTEGER PRIMARY KEY CHECK (singleton = 1),
        day_budget_units INTEGER CHECK (day_budget_units IS NULL OR day_budget_units > 0),
        week_budget_units INTEGER CHECK (week_budget_units IS NULL OR week_budget_units > 0),
        month_budget_units INTEGER CHECK (month_budget_units IS NULL OR month_budget_units > 0),
        alert_percentages TEXT NOT NULL CHECK (json_valid(alert_percentages) AND json_type(alert_percentages) = 'array'),
        version INTEGER NOT NULL CHECK (version > 0),
        updated_at INTEGER NOT NULL
      );
      INSERT INTO installation_budget (singleton, alert_percentages, version, updated_at)
        VALUES (1, '[50,80,100]', 1, CAST(strftime('%s', 'now') AS INTEGER) * 1000);

      CREATE TABLE budget_alerts (
        scope TEXT NOT NULL,
        budget TEXT NOT NULL,
        period_start INTEGER NOT NULL,
        percent INTEGER NOT NULL CHECK (percent BETWEEN 1 AND 100),
        at INTEGER NOT NULL,
        PRIMARY KEY (scope, budget, period_start, percent)
      ) WITHOUT ROWID;

      CREATE INDEX authorizations_by_time ON authorizations (created_at);
      CREATE INDEX authorizations_by_agent_target ON authorizations (agent_id, target_id, created_at) WHERE target_id IS NOT NULL;
    `,
  },
  {
    version: 12,
    name: 'webhook sinks and their deliveries',
    // Webhook sinks (docs/ledger.md "Webhooks"; src/ledger/webhooks/): where the ledger's events
    // are POSTed. `url` is kept only here (its path may itself be a secret, as a Slack webhook's
    // is): answers and logs show its origin. `secret_path` names the file whose content signs
    // each delivery, read at delivery time; the secret itself is never stored. `event_types` is
    // a JSON array of event types, or NULL for all. `cursor_event_id` is the last event the sink
    // has taken up into deliveries (advanced in the transaction that inserts them); a new sink
    // starts at the latest event at its creation. `removed_at` ends it (kept for the history).
    //
    // One delivery per (sink, event): pending until a 2xx answer (delivered) or until retries end
    // 24 h after the event (failed). `last_http_status` / `last_error` say how the last attempt
    // went: a status code and an error class, never a response body or a URL.
    up: `
      CREATE TABLE webhook_sinks (
        sink_id TEXT PRIMARY KEY CHECK (sink_id LIKE 'whk_%'),
        url TEXT NOT NULL CHECK (length(url) BETWEEN 8 AND 2048),
        format TEXT NOT NULL CHECK (format IN ('lexec', 'slack')),
        event_types TEXT CHECK (event_types IS NULL OR (json_valid(event_types) AND json_type(event_types) = 'array')),
        secret_path TEXT NOT NULL CHECK (secret_path LIKE '/%'),
        created_at INTEGER NOT NULL,
        removed_at INTEGER,
        cursor_event_id INTEGER NOT NULL CHECK (cursor_event_id >= 0)
      );

      CREATE TABLE webhook_deliveries (
        delivery_id INTEGER PRIMARY KEY AUTOINCREMENT,
        sink_id TEXT NOT NULL REFERENCES webhook_sinks (sink_id),
        event_id INTEGER NOT NULL REFERENCES events (event_id),
        status TEXT NOT NULL CHECK (status IN ('pending', 'delivered', 'failed')),
        attempts INTEGER NOT NULL DEFAULT 0 CHECK (attempts >= 0),
        created_at INTEGER NOT NULL,
        next_attempt_at INTEGER,
        last_attempt_at INTEGER,
        last_http_status INTEGER,
        last_error TEXT,
        delivered_at INTEGER,
        UNIQUE (sink_id, event_id),
        CHECK ((status = 'pending') = (next_attempt_at IS NOT NULL)),
        CHECK ((status = 'delivered') = (delivered_at IS NOT NULL))
      );
      CREATE INDEX webhook_deliveries_due ON webhook_deliveries (sink_id, next_attempt_at) WHERE status = 'pending';
      CREATE INDEX webhook_deliveries_by_status ON webhook_deliveries (status, sink_id);
    `,
  },
  {
    version: 13,
    name: 'metrics credentials',
    // A `metrics` credential (docs/metrics.md) lets a Prometheus scraper read `GET /metrics` and
    // nothing else, so a scraper holds no capability that could spend, decide or administer.
    // Changing the kind CHECK means rebuilding the table, as migration 7 did: the rows are copied
    // column for column and migration 7's index and both triggers are made again. The audit trail
    // needs no new actor kind: a metrics credential only reads, and reads are not audited.
    rebuildsTables: true,
    up: `
      CREATE TABLE credentials_v13 (
        credential_id TEXT PRIMARY KEY,
        kind TEXT NOT NULL CHECK (kind IN ('admin', 'agent', 'approver', 'executor', 'reconciliation', 'metrics')),
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
      INSERT INTO credentials_v13 (credential_id, kind, agent_id, lookup, digest, created_at, holder_name, lineage, rotated_from, replaced_by, last_used_at, revoked_at)
        SELECT credential_id, kind, agent_id, lookup, digest, created_at, holder_name, lineage, rotated_from, replaced_by, last_used_at, revoked_at FROM credentials;
      DROP TABLE credentials;
      ALTER TABLE credentials_v13 RENAME TO credentials;
      CREATE INDEX credentials_by_lineage ON credentials (lineage);
      CREATE TRIGGER credential_secrets_are_fixed BEFORE UPDATE OF credential_id, kind, agent_id, lookup, digest, created_at, lineage, rotated_from ON credentials
        BEGIN SELECT RAISE(ABORT, 'a credential''s identity never changes'); END;
      CREATE TRIGGER credentials_are_kept BEFORE DELETE ON credentials
        BEGIN SELECT RAISE(ABORT, 'credentials are revoked, never deleted'); END;
    `,
  },
];
