import type { LedgerAgent, LedgerPolicy } from './wire/answers.js';
import { randomUUID } from 'node:crypto';
import type Database from 'better-sqlite3';
import { conflict, LedgerError, notFound, versionMismatch } from './ledger-error.js';
import { velocityLimits, type SpendPolicy } from './authorization-rules.js';
import { agentView, createAdminStore, policyAuditState, policyView, type AgentRow } from './store/admin-store.js';
import { createAuditStore, LEDGER_ACTOR, type AuditActor, type CredentialActor } from './store/audit-store.js';

export type { Principal } from './credential-lifecycle.js';

/** The fields a policy change may leave out to keep them: the velocity limits and the budgets. */
const KEPT_WHEN_UNSTATED = [
  'max_requests_per_minute',
  'max_requests_per_hour',
  'suspend_after_velocity_refusals',
  'day_budget_units',
  'week_budget_units',
  'month_budget_units',
  'budget_alert_percentages',
  'targets',
] as const;

/**
 * A velocity or budget field a policy change leaves out (`undefined`) keeps its current value;
 * `null` removes it. So a client that predates the fields (an older CLI, the console's cap form)
 * can change the caps without silently dropping an operator's runaway-loop breaker or budgets.
 */
function keepUnstatedVelocity(policy: SpendPolicy, current: SpendPolicy): SpendPolicy {
  const kept: Record<string, unknown> = {};
  for (const field of KEPT_WHEN_UNSTATED) kept[field] = policy[field] === undefined ? current[field] : policy[field];
  const merged: SpendPolicy = {
    ...policy,
    ...(kept as Partial<SpendPolicy>),
  };
  // The breaker counts velocity refusals: with no limit left to refuse, it would never trip.
  if (merged.suspend_after_velocity_refusals != null && velocityLimits(merged).length === 0) {
    throw new LedgerError('invalid', 'invalid_request', { fields: ['suspend_after_velocity_refusals'] });
  }
  return merged;
}

export type LedgerAdmin = ReturnType<typeof createLedgerAdmin>;

/**
 * The admin's use cases: agents and their policies (SQL: store/admin-store.ts; credentials:
 * credential-lifecycle.ts). Each change is in the audit trail (store/audit-store.ts), in its
 * transaction, with who made it: the route's principal, or the ledger itself (LEDGER_ACTOR) for
 * its own acts at start.
 */
export function createLedgerAdmin({ db, now, defaultPolicy }: { db: Database.Database; now: () => number; defaultPolicy: SpendPolicy }) {
  const store = createAdminStore(db);
  const audit = createAuditStore(db);

  function requireAgent(agentId: string): AgentRow {
    const row = store.agent(agentId);
    if (!row) throw notFound();
    return row;
  }

  return {
    addAgent(name: string, actor: AuditActor): LedgerAgent {
      return store.immediate(() => {
        if (store.agentNamed(name)) throw conflict('agent_exists', ['name']);
        const agentId = `agt_${randomUUID()}`;
        const at = now();
        store.insertAgent(agentId, name, at);
        store.insertDefaultPolicy(agentId, defaultPolicy, at);
        audit.record({ actor, action: 'agent_added', agentId, subjectId: agentId, after: { name, status: 'active', policy_version: '1' }, at });
        return agentView(requireAgent(agentId));
      });
    },

    /**
     * Applies the configured default policy to every agent that follows it (never given its own
     * with \`ledger policy set\`): called once when the ledger starts, so a changed
     * \`[ledger.default_policy]\` — a lowered cap included — holds from that start on. A policy that
     * changes gets a new version, audited as the ledger's own change. Returns the agents changed.
     */
    applyDefaultPolicy(): string[] {
      return store.immediate(() => {
        const changed = store.followersToChange(defaultPolicy);
        const before = changed.map((agentId) => policyAuditState(store.policy(agentId)));
        const at = now();
        store.applyDefault(defaultPolicy, at);
        changed.forEach((agentId, index) => {
          audit.record({ actor: LEDGER_ACTOR, action: 'policy_changed', agentId, subjectId: agentId, before: before[index], after: policyAuditState(store.policy(agentId)), at });
        });
        return changed;
      });
    },

    listAgents(): LedgerAgent[] {
      return store.agents().map(agentView);
    },

    policy(agentId: string): LedgerPolicy {
      requireAgent(agentId);
      return policyView(store.policy(agentId));
    },

    /**
     * Replaces the agent's policy. With `expectedVersion` (the route's `If-Match`) only if the
     * policy is still at that version: checked and written in one IMMEDIATE transaction, so of
     * two changes made from the same version exactly one lands and the other is refused with the
     * version it missed (`policy_version_mismatch`), changing nothing. Without it, the change is
     * unconditional, as before the precondition existed. A velocity field the change leaves out
     * keeps its value (null removes it): a client that knows only the caps never drops the breaker.
     * The change is audited with the policy before and after; a refused one changes and audits nothing.
     */
    setPolicy(agentId: string, policy: SpendPolicy, actor: CredentialActor, expectedVersion: bigint | null = null): LedgerPolicy {
      return store.immediate(() => {
        requireAgent(agentId);
        const current = store.policy(agentId);
        if (expectedVersion !== null && current.version !== expectedVersion) throw versionMismatch('policy_version_mismatch', current.version);
        const at = now();
        store.setPolicy(agentId, keepUnstatedVelocity(policy, current), at);
        const changed = store.policy(agentId);
        audit.record({ actor, action: 'policy_changed', agentId, subjectId: agentId, before: policyAuditState(current), after: policyAuditState(changed), at });
        return policyView(changed);
      });
    },
  };
}
