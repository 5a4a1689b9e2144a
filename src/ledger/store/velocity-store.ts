import type Database from 'better-sqlite3';
import { HOUR_MS, type VelocityLimit, type VelocityReading } from '../authorization-rules.js';

/*
 * The ledger's SQL for the runaway-loop breaker (use-cases/velocity-breaker.ts): the log of an
 * agent's spend requests while its policy sets a velocity limit (`agent_requests`, migration 6),
 * refused ones included, pruned past the longest window (an hour). The statements run inside the
 * request's IMMEDIATE transaction, so concurrent requests — from any number of ledger processes
 * on one database — are counted one after another; they decide nothing.
 */

export type VelocityStore = ReturnType<typeof createVelocityStore>;

export function createVelocityStore(db: Database.Database) {
  // Prepared once: the request path is the ledger's hottest.
  const statements = {
    // By the (agent_id, requested_at) index, walked from the latest: at most `limit` entries.
    ranked: db.prepare('SELECT requested_at FROM agent_requests WHERE agent_id = ? ORDER BY requested_at DESC LIMIT 1 OFFSET ?').pluck(),
    record: db.prepare('INSERT INTO agent_requests (agent_id, requested_at, velocity_refused) VALUES (?, ?, ?)'),
    prune: db.prepare('DELETE FROM agent_requests WHERE agent_id = ? AND requested_at <= ?'),
    refusalsSince: db.prepare('SELECT COUNT(*) FROM agent_requests WHERE agent_id = ? AND velocity_refused = 1 AND requested_at > ?').pluck(),
    forgetRefusals: db.prepare('UPDATE agent_requests SET velocity_refused = 0 WHERE agent_id = ? AND velocity_refused = 1'),
  };
  /** The time of the agent's earlier request at this rank by recency (1 = the latest), or null. */
  const rankedAt = (agentId: string, rank: bigint): number | null => {
    if (rank < 1n) return null;
    const at = statements.ranked.get(agentId, rank - 1n) as bigint | undefined;
    return at === undefined ? null : Number(at);
  };

  return {
    /** What `decideVelocity` needs of each limit, read before this request is logged. */
    read(agentId: string, limits: readonly VelocityLimit[]): VelocityReading[] {
      return limits.map((limit) => ({ ...limit, rankLimit: rankedAt(agentId, limit.limit), rankBeforeLimit: rankedAt(agentId, limit.limit - 1n) }));
    },
    /** Logs this request (and whether velocity refused it); forgets the agent's requests older than an hour. */
    record(agentId: string, at: number, velocityRefused: boolean): void {
      statements.prune.run(agentId, at - HOUR_MS);
      statements.record.run(agentId, at, velocityRefused ? 1 : 0);
    },
    /** The agent's velocity refusals in the rolling hour ending at `at` (this one included once logged). */
    refusalsInHour: (agentId: string, at: number) => Number(statements.refusalsSince.get(agentId, at - HOUR_MS)),
    /** A resumed agent starts the breaker's count afresh; its requests still count against the limits. */
    forgetRefusals(agentId: string): void {
      statements.forgetRefusals.run(agentId);
    },
  };
}
