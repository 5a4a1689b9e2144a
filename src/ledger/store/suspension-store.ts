import type Database from 'better-sqlite3';
import type { AgentRow } from './admin-store.js';
import type { AuthorizationRow } from './ledger-rows.js';

/*
 * The ledger's SQL for suspending and resuming an agent (use-cases/suspend-agent.ts): the agent's
 * status, and the cancellation of its unclaimed authorizations. The statements run inside the
 * use case's IMMEDIATE transaction (the ledger store's `immediate`), so a suspension and its
 * cancellations commit together; they decide nothing.
 */

/** Why an authorization was cancelled: the only reason there is. */
export const AGENT_SUSPENDED = 'agent_suspended';

/** Who suspended an agent: an operator (`ledger agents suspend`), or the runaway-loop breaker of its policy. */
export type SuspendedBy = 'operator' | 'velocity_breaker';

export type SuspensionStore = ReturnType<typeof createSuspensionStore>;

export function createSuspensionStore(db: Database.Database) {
  const statements = {
    agent: db.prepare('SELECT * FROM agents WHERE agent_id = ?'),
    suspend: db.prepare("UPDATE agents SET status = 'suspended', suspended_at = ?, suspension_reason = ?, suspended_by = ? WHERE agent_id = ? AND status = 'active'"),
    resume: db.prepare("UPDATE agents SET status = 'active', suspended_at = NULL, suspension_reason = NULL, suspended_by = NULL WHERE agent_id = ? AND status = 'suspended'"),
    // Unclaimed: never an execution id. A claimed authorization is an execution under way; it
    // finishes, settles, releases or parks as ever (money truth wins over the switch).
    unclaimed: db.prepare("SELECT * FROM authorizations WHERE agent_id = ? AND status IN ('requested', 'approved') AND execution_id IS NULL"),
    cancel: db.prepare("UPDATE authorizations SET status = 'cancelled', cancellation_reason = @reason, closed_at = @at WHERE token_id = @token_id"),
  };

  return {
    agent: (agentId: string) => statements.agent.get(agentId) as AgentRow | undefined,
    suspend(agentId: string, reason: string | null, at: number, by: SuspendedBy): void {
      statements.suspend.run(at, reason, by, agentId);
    },
    resume(agentId: string): void {
      statements.resume.run(agentId);
    },
    /** Cancels the agent's requested and approved authorizations nobody claimed; answers them as they were (inside a transaction). */
    cancelUnclaimed(agentId: string, at: number): AuthorizationRow[] {
      const unclaimed = statements.unclaimed.all(agentId) as AuthorizationRow[];
      for (const row of unclaimed) statements.cancel.run({ token_id: row.token_id, reason: AGENT_SUSPENDED, at });
      return unclaimed;
    },
  };
}
