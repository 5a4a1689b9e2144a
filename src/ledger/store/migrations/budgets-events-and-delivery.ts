import type { Migration } from '../../../storage/open-database.js';

/** The ledger's migrations, Versions 10-14: what a request pays for, the events outbox, budgets, webhook sinks, metrics credentials, their operator actions audited (issue 28). Applied in order with the others (migrations.ts). */
export const BUDGETS_EVENTS_AND_DELIVERY_MIGRATIONS: readonly Migration[] = [
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
      );

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
  {
    version: 14,
    name: 'webhook sinks and the installation budget are audited',
    // Issue 28's operator actions get their own audit actions (docs/ledger.md "Audit trail"):
    // `webhook_added`, `webhook_removed` and `budget_changed` (the installation-wide budget).
    // The action list is a CHECK, so `audit_events` is rebuilt as migration 13 rebuilt
    // `credentials`: the same columns, CHECKs, indexes and both append-only triggers, the list
    // extended. The triggers go first (the copy's DROP would otherwise meet them) and are made
    // again on the new table. Rows are copied with their `audit_id`; the AUTOINCREMENT counter is
    // carried over from the old table's row of `sqlite_sequence` (the highest id ever given, which
    // the copy alone would only approximate) and follows the rename, so an id is still never
    // reused. History is not rewritten: installation budget changes made before this migration
    // stay `policy_changed` of subject `installation_budget`.
    rebuildsTables: true,
    up: `
      DROP TRIGGER audit_events_are_final;
      DROP TRIGGER audit_events_are_kept;
      CREATE TABLE audit_events_v14 (
        audit_id INTEGER PRIMARY KEY AUTOINCREMENT,
        at INTEGER NOT NULL,
        actor_credential_id TEXT,
        actor_kind TEXT NOT NULL CHECK (actor_kind IN ('admin', 'agent', 'approver', 'executor', 'reconciliation', 'ledger')),
        action TEXT NOT NULL CHECK (action IN ('agent_added', 'agent_suspended', 'agent_resumed', 'policy_changed', 'authorization_approved', 'authorization_denied',
          'reconciliation_resolved', 'credential_registered', 'credential_revoked', 'credential_rotated', 'webhook_added', 'webhook_removed', 'budget_changed')),
        agent_id TEXT REFERENCES agents (agent_id),
        subject_id TEXT NOT NULL,
        before TEXT CHECK (before IS NULL OR (json_valid(before) AND json_type(before) = 'object')),
        after TEXT CHECK (after IS NULL OR (json_valid(after) AND json_type(after) = 'object')),
        reason TEXT CHECK (reason IS NULL OR length(reason) <= 500),
        CHECK ((actor_kind = 'ledger') = (actor_credential_id IS NULL))
      );
      INSERT INTO audit_events_v14 (audit_id, at, actor_credential_id, actor_kind, action, agent_id, subject_id, before, after, reason)
        SELECT audit_id, at, actor_credential_id, actor_kind, action, agent_id, subject_id, before, after, reason FROM audit_events ORDER BY audit_id;
      DELETE FROM sqlite_sequence WHERE name = 'audit_events_v14';
      INSERT INTO sqlite_sequence (name, seq)
        SELECT 'audit_events_v14', MAX(COALESCE((SELECT seq FROM sqlite_sequence WHERE name = 'audit_events'), 0), COALESCE((SELECT MAX(audit_id) FROM audit_events_v14), 0))
        WHERE EXISTS (SELECT 1 FROM sqlite_sequence WHERE name = 'audit_events') OR EXISTS (SELECT 1 FROM audit_events_v14);
      DROP TABLE audit_events;
      ALTER TABLE audit_events_v14 RENAME TO audit_events;
      CREATE INDEX audit_events_by_agent ON audit_events (agent_id, audit_id);
      CREATE INDEX audit_events_by_time ON audit_events (at);
      CREATE TRIGGER audit_events_are_final BEFORE UPDATE ON audit_events
        BEGIN SELECT RAISE(ABORT, 'audit events are append-only'); END;
      CREATE TRIGGER audit_events_are_kept BEFORE DELETE ON audit_events
        BEGIN SELECT RAISE(ABORT, 'audit events are never deleted'); END;
    `,
  },
];
