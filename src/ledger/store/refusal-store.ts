import type Database from 'better-sqlite3';

/*
 * Runs of identical refusals (ledger migration 16; docs/ledger.md "Events"): per agent and
 * refusal reason, when its last `authorization.refused` event was written and how many refusals
 * of the same kind have been counted since without one. The statements run inside the refused
 * request's IMMEDIATE transaction (the use case decides; use-cases/request-authorization.ts).
 */

export interface RefusalRun {
  readonly lastEventAt: number;
  readonly repeated: number;
}

export type RefusalStore = ReturnType<typeof createRefusalStore>;

export function createRefusalStore(db: Database.Database) {
  const statements = {
    run: db.prepare('SELECT last_event_at, repeated FROM refusal_runs WHERE agent_id = ? AND reason = ?'),
    written: db.prepare(
      `INSERT INTO refusal_runs (agent_id, reason, last_event_at, repeated) VALUES (@agent_id, @reason, @at, 0)
       ON CONFLICT (agent_id, reason) DO UPDATE SET last_event_at = excluded.last_event_at, repeated = 0`,
    ),
    repeated: db.prepare('UPDATE refusal_runs SET repeated = repeated + 1 WHERE agent_id = ? AND reason = ?'),
  };
  return {
    /** The agent's run of refusals for `reason`, if one was ever written. */
    run(agentId: string, reason: string): RefusalRun | undefined {
      const row = statements.run.get(agentId, reason) as { last_event_at: bigint; repeated: bigint } | undefined;
      return row === undefined ? undefined : { lastEventAt: Number(row.last_event_at), repeated: Number(row.repeated) };
    },
    /** An event was written for this refusal at `at`: the run starts counting again. */
    written(agentId: string, reason: string, at: number): void {
      statements.written.run({ agent_id: agentId, reason, at });
    },
    /** One more refusal counted without an event. */
    repeated(agentId: string, reason: string): void {
      statements.repeated.run(agentId, reason);
    },
  };
}
