/*
 * Migrations 10 onward: the ledger's reconciliation record of a parked execution, and the
 * executor's own credential table.
 */

// When the ledger answered the reconciliation record of a parked execution (opened, or refused as
// final). Until then the execution still needs a run, which the closed-run rescheduler provides
// when an operator closed it (docs/executions.md "Rescheduling closed runs"). Executions parked
// before this migration were counted as answered — wrongly for some: migration 11 undoes it.
export const ledgerRecordAnswered = `
  ALTER TABLE executions ADD COLUMN ledger_record_at INTEGER;
  UPDATE executions SET ledger_record_at = updated_at WHERE state = 'reconciliation';
  CREATE INDEX executions_awaiting_ledger_record ON executions (state) WHERE state = 'reconciliation' AND ledger_record_at IS NULL;
`;

/**
 * Migration 10 counted every execution parked before it as answered by the ledger. One parked
 * while the ledger was away, or killed between the park and the record, was not: its run (or the
 * run the closed-run rescheduler would start) then ended without opening the record, and the
 * hold stayed claimed with nobody told at the ledger. The mark is cleared on every parked
 * execution, so each is brought to the ledger once more: a record already open is answered as a
 * replay, one refused as final is marked answered again (execution-runner.ts).
 */
export const ledgerRecordRecheck = `
  UPDATE executions SET ledger_record_at = NULL WHERE state = 'reconciliation';
`;

/**
 * The caller and reconciliation capabilities the executor accepts, by SHA-256 digest only, read on
 * every request (docs/credentials.md "The executor's credential table"). `lookup` (the digest's
 * first 8 bytes in hex) finds a row before the digest is compared in full; `expires_at` ends a
 * rotation's grace; `last_used_at` is written at most once a minute.
 */
export const executorCredentials = `
  CREATE TABLE credentials (
    credential_id TEXT PRIMARY KEY,
    kind TEXT NOT NULL CHECK (kind IN ('caller', 'reconciliation')),
    lookup TEXT NOT NULL UNIQUE CHECK (length(lookup) = 16),
    digest BLOB NOT NULL CHECK (length(digest) = 32),
    created_at INTEGER NOT NULL,
    last_used_at INTEGER,
    status TEXT NOT NULL CHECK (status IN ('active', 'revoked')),
    revoked_at INTEGER,
    expires_at INTEGER,
    CHECK ((status = 'revoked') = (revoked_at IS NOT NULL))
  );
`;

/**
 * A `metrics` capability (docs/metrics.md): a Prometheus scraper's, for `GET /metrics` only. The
 * kind CHECK changes, so the table is rebuilt (SQLite cannot alter a CHECK), every row copied as
 * it is; nothing references the table and it has no index or trigger besides its UNIQUE lookup.
 */
export const metricsCredentials = `
  CREATE TABLE credentials_v13 (
    credential_id TEXT PRIMARY KEY,
    kind TEXT NOT NULL CHECK (kind IN ('caller', 'reconciliation', 'metrics')),
    lookup TEXT NOT NULL UNIQUE CHECK (length(lookup) = 16),
    digest BLOB NOT NULL CHECK (length(digest) = 32),
    created_at INTEGER NOT NULL,
    last_used_at INTEGER,
    status TEXT NOT NULL CHECK (status IN ('active', 'revoked')),
    revoked_at INTEGER,
    expires_at INTEGER,
    CHECK ((status = 'revoked') = (revoked_at IS NOT NULL))
  );
  INSERT INTO credentials_v13 (credential_id, kind, lookup, digest, created_at, last_used_at, status, revoked_at, expires_at)
    SELECT credential_id, kind, lookup, digest, created_at, last_used_at, status, revoked_at, expires_at FROM credentials;
  DROP TABLE credentials;
  ALTER TABLE credentials_v13 RENAME TO credentials;
`;

// docs/metrics.md, docs/decisions.md "A scrape reads kept counts, not the history":
// `lexec_executor_executions` counted every execution by state at each scrape, a read of the whole
// history on the executor's request thread. The executions that have left the running states
// (succeeded, failed, reconciliation) are counted by triggers in the transaction of each change (a
// crash keeps both or neither) — once when an execution gets there, again only if a human
// resolves a parked one — and filled here from the rows, which stay the record: the invariant
// checker holds the counts to them (docs/reliability.md). The running states (pending, scheduled,
// running) are few at any time: the metrics count them from the state index. No CHECK on the
// count: a count must never refuse the change it counts.
export const executionCounts = `
  CREATE TABLE execution_counts (
    state TEXT PRIMARY KEY,
    count INTEGER NOT NULL
  );
  INSERT INTO execution_counts (state, count)
    SELECT state, COUNT(*) FROM executions WHERE state NOT IN ('pending', 'scheduled', 'running') GROUP BY state;
  CREATE TRIGGER execution_counted AFTER INSERT ON executions
    WHEN NEW.state NOT IN ('pending', 'scheduled', 'running')
    BEGIN
      INSERT INTO execution_counts (state, count) VALUES (NEW.state, 1)
        ON CONFLICT (state) DO UPDATE SET count = count + 1;
    END;
  CREATE TRIGGER execution_ended AFTER UPDATE OF state ON executions
    WHEN NEW.state NOT IN ('pending', 'scheduled', 'running') AND NEW.state IS NOT OLD.state
    BEGIN
      INSERT INTO execution_counts (state, count) VALUES (NEW.state, 1)
        ON CONFLICT (state) DO UPDATE SET count = count + 1;
    END;
  CREATE TRIGGER execution_left AFTER UPDATE OF state ON executions
    WHEN OLD.state NOT IN ('pending', 'scheduled', 'running') AND NEW.state IS NOT OLD.state
    BEGIN UPDATE execution_counts SET count = count - 1 WHERE state = OLD.state; END;
  CREATE TRIGGER execution_uncounted AFTER DELETE ON executions
    WHEN OLD.state NOT IN ('pending', 'scheduled', 'running')
    BEGIN UPDATE execution_counts SET count = count - 1 WHERE state = OLD.state; END;
`;
