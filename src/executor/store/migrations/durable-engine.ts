import { randomBytes } from 'node:crypto';
import type Database from 'better-sqlite3';

/*
 * Migrations 4-9: the durable executor — the embedded workflow engine's runs, the submit window,
 * the operator's list indexes, the installation's identity, the frozen seed decision and the
 * evidence an execution was parked with.
 */

/**
 * The embedded workflow engine's runs: one row per stable workflow id. The payload is the
 * execution id and the phase — nothing else (no credentials, bodies, URLs or paths).
 */
export const embeddedEngine = `
  CREATE TABLE workflow_runs (
    workflow_id TEXT PRIMARY KEY,
    execution_id TEXT NOT NULL UNIQUE REFERENCES executions (execution_id),
    phase TEXT NOT NULL CHECK (phase IN ('submit_provider', 'poll_provider_operation', 'store_artifacts', 'settle')),
    status TEXT NOT NULL CHECK (status IN ('queued', 'running', 'completed')),
    attempt INTEGER NOT NULL DEFAULT 0,
    available_at INTEGER NOT NULL,
    lease_owner TEXT,
    lease_expires_at INTEGER,
    last_error_code TEXT,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
  );
  CREATE INDEX workflow_runs_due ON workflow_runs (status, available_at);

  CREATE TABLE reconciliation_resolutions (
    execution_id TEXT PRIMARY KEY REFERENCES executions (execution_id),
    resolution TEXT NOT NULL CHECK (resolution IN ('settled', 'released')),
    images_billed INTEGER,
    amount_units INTEGER,
    note TEXT NOT NULL,
    resolved_at INTEGER NOT NULL
  );

  ALTER TABLE executions ADD COLUMN quoted_units INTEGER CHECK (quoted_units >= 0);
  ALTER TABLE executions ADD COLUMN provider_mode TEXT;

  ALTER TABLE provider_attempts ADD COLUMN delivered_images INTEGER CHECK (delivered_images >= 0);
  ALTER TABLE provider_attempts ADD COLUMN outcome_code TEXT;
`;

/**
 * When an attempt's submission stopped being in flight: its acceptance was checkpointed, or its
 * first outcome recorded (an answer refused, a failure, or the restart that found it
 * interrupted). With `created_at` (recorded before any byte is sent) it bounds when the provider
 * can have received the job — the window an operator searches the provider's records in.
 */
export const submitWindow = `
  ALTER TABLE provider_attempts ADD COLUMN submit_settled_at INTEGER;
  -- Attempts recorded before this column: their last update bounds the window (wider, never narrower).
  UPDATE provider_attempts SET submit_settled_at = updated_at WHERE state <> 'submitting';
`;

/**
 * The operator's list of executions (GET /v1/executions) walks executions newest first by
 * (created_at, execution_id), all of them or those in one state: an index for each, so a page
 * reads its rows in order instead of scanning and sorting the table on every console poll.
 */
export const executionListIndexes = `
  CREATE INDEX executions_newest ON executions (created_at, execution_id);
  CREATE INDEX executions_by_state_newest ON executions (state, created_at, execution_id);
`;

/**
 * Task-queue ownership (docs/executions.md "Task-queue ownership"): the installation's identity,
 * created once here (a random 48-bit id, not a secret), which names its default task queue and its
 * workers; and the log of workflow runs started again because the engine closed a run under a
 * live execution (or it was left on another task queue), which `stack status` and `stack doctor`
 * count.
 */
export function installationIdentity(db: Database.Database): void {
  db.exec(`
    CREATE TABLE installation (
      singleton INTEGER PRIMARY KEY CHECK (singleton = 1),
      installation_id TEXT NOT NULL CHECK (length(installation_id) = 12),
      created_at INTEGER NOT NULL
    );
    CREATE TABLE workflow_reschedules (
      reschedule_id INTEGER PRIMARY KEY,
      execution_id TEXT NOT NULL REFERENCES executions (execution_id),
      previous_status TEXT NOT NULL,
      previous_task_queue TEXT,
      task_queue TEXT NOT NULL,
      rescheduled_at INTEGER NOT NULL
    );
    CREATE INDEX workflow_reschedules_by_time ON workflow_reschedules (rescheduled_at);
  `);
  db.prepare('INSERT INTO installation (singleton, installation_id, created_at) VALUES (1, ?, ?)').run(randomBytes(6).toString('hex'), Date.now());
}

/**
 * Whether an execution's submission carries the correlation seed, decided from its target's
 * `send_seed` when it is admitted and frozen with it (as its pricing snapshot is), so a
 * configuration change never changes what an execution already admitted sends. Executions from
 * before this column were admitted when every submission carried the seed: 1.
 */
export const frozenSeedDecision = `
  ALTER TABLE executions ADD COLUMN send_seed INTEGER NOT NULL DEFAULT 1 CHECK (send_seed IN (0, 1));
`;

/**
 * The evidence an execution was parked with (the JSON its ledger reconciliation record is opened
 * with), written in the same statement as the `reconciliation` state: a restart between the park
 * and the ledger record reopens the record with it, including what only the moment of parking
 * knew (a mismatched request id, the receipt id and code of a rejected receipt). Executions
 * parked before this column have none; their record is reopened from the attempt as before.
 */
export const parkEvidence = `
  ALTER TABLE executions ADD COLUMN reconciliation_evidence TEXT;
`;
