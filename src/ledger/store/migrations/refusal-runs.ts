import type { Migration } from '../../../storage/open-database.js';

export const REFUSAL_RUNS_MIGRATIONS: readonly Migration[] = [
  {
    version: 16,
    name: 'runs of identical refusals, written as one event a minute',
    // docs/ledger.md "Events": a refused spend request writes `authorization.refused`, but a
    // runaway agent refused again and again (suspended, too fast, over a cap) wrote one event per
    // request — and every webhook sink got one delivery per request, an alert storm retried for
    // 24 hours. A run is an agent's refusals for one reason: the first is written, the next ones
    // within a minute of the last written one are only counted here, in the refusal's own
    // transaction, and the next one written says how many were not (`repeated`).
    up: `
      CREATE TABLE refusal_runs (
        agent_id TEXT NOT NULL REFERENCES agents (agent_id),
        reason TEXT NOT NULL,
        last_event_at INTEGER NOT NULL,
        repeated INTEGER NOT NULL DEFAULT 0 CHECK (repeated >= 0),
        PRIMARY KEY (agent_id, reason)
      );
    `,
  },
];
