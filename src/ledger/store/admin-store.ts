import type Database from 'better-sqlite3';
import type { LedgerAgent, LedgerAuditState, LedgerPolicy } from '../wire/answers.js';
import { UNITS_SCALE } from '../../domain/money.js';
import { redactSecretShapes } from '../../domain/secret-text.js';
import type { SpendPolicy } from '../authorization-rules.js';
import { DEFAULT_ALERT_PERCENTAGES } from '../budget-rules.js';
import { BUDGET_ASSIGN, BUDGET_DIFFERS, budgetParameters, budgetPolicyOf, type BudgetColumns } from './budget-store.js';
import { immediateTransaction } from './immediate-transaction.js';

/*
 * The ledger's SQL for agents and their policies (the admin's use cases,
 * ledger-admin.ts): prepared statements, the transaction they run in, rows mapped to the API's
 * views. It decides nothing: what is a conflict or not found is the use cases'.
 */

export interface AgentRow {
  agent_id: string;
  name: string;
  status: 'active' | 'suspended';
  created_at: bigint;
  /** Set exactly while suspended (migration 5). */
  suspended_at: bigint | null;
  suspension_reason: string | null;
  /** Who suspended it (migration 6): `operator` or `velocity_breaker`; null while active. */
  suspended_by: 'operator' | 'velocity_breaker' | null;
}

/** A `policies` row's columns beside the spend policy. */
interface PolicyColumns {
  agent_id: string;
  /** Null when not set (migration 6). */
  max_requests_per_minute: bigint | null;
  max_requests_per_hour: bigint | null;
  suspend_after_velocity_refusals: bigint | null;
  version: bigint;
  updated_at: bigint;
  follows_default: bigint;
}

/** A `policies` row as stored (its budget lists as JSON text: read it with `policyOf`). */
export interface StoredPolicyRow extends Omit<SpendPolicy, keyof BudgetColumns | keyof PolicyColumns>, BudgetColumns, PolicyColumns {}

/** A stored policy row with its budget part read (budget-store.ts). */
export function policyOf(row: StoredPolicyRow): PolicyRow {
  return { ...row, ...budgetPolicyOf(row) };
}

export interface PolicyRow extends Omit<SpendPolicy, keyof PolicyColumns>, PolicyColumns {}

export function agentView(row: AgentRow): LedgerAgent {
  return {
    agent_id: row.agent_id,
    name: row.name,
    status: row.status,
    created_at: new Date(Number(row.created_at)).toISOString(),
    suspended_at: row.suspended_at === null ? null : new Date(Number(row.suspended_at)).toISOString(),
    // Text is refused when secret-shaped; redacted all the same, as every free text the ledger shows.
    suspension_reason: row.suspension_reason === null ? null : redactSecretShapes(row.suspension_reason),
    suspended_by: row.status === 'suspended' ? (row.suspended_by ?? 'operator') : null,
  };
}

export function policyView(row: PolicyRow): LedgerPolicy {
  return {
    agent_id: row.agent_id,
    per_authorization_cap_units: row.per_authorization_cap_units,
    daily_cap_units: row.daily_cap_units,
    approval_threshold_units: row.approval_threshold_units,
    units_scale: UNITS_SCALE,
    currency: 'USD',
    max_requests_per_minute: row.max_requests_per_minute,
    max_requests_per_hour: row.max_requests_per_hour,
    suspend_after_velocity_refusals: row.suspend_after_velocity_refusals,
    day_budget_units: row.day_budget_units ?? null,
    week_budget_units: row.week_budget_units ?? null,
    month_budget_units: row.month_budget_units ?? null,
    budget_alert_percentages: [...(row.budget_alert_percentages ?? DEFAULT_ALERT_PERCENTAGES)],
    targets: row.targets == null ? null : row.targets.map((target) => ({ target_id: target.target_id, month_cap_units: target.month_cap_units })),
    version: row.version,
    updated_at: new Date(Number(row.updated_at)).toISOString(),
    /** `default`: the configured default, applied again at every ledger start; `operator`: set with `ledger policy set`. */
    source: row.follows_default === 1n ? ('default' as const) : ('operator' as const),
  };
}

/** A policy as the audit trail keeps it before and after a change: its version, where it comes from, its limits (digits; null: not set). */
export function policyAuditState(row: PolicyRow): LedgerAuditState {
  const digits = (value: bigint | null) => (value === null ? null : value.toString());
  return {
    version: row.version.toString(),
    source: row.follows_default === 1n ? 'default' : 'operator',
    per_authorization_cap_units: row.per_authorization_cap_units.toString(),
    daily_cap_units: row.daily_cap_units.toString(),
    approval_threshold_units: row.approval_threshold_units.toString(),
    max_requests_per_minute: digits(row.max_requests_per_minute),
    max_requests_per_hour: digits(row.max_requests_per_hour),
    suspend_after_velocity_refusals: digits(row.suspend_after_velocity_refusals),
    day_budget_units: digits(row.day_budget_units ?? null),
    week_budget_units: digits(row.week_budget_units ?? null),
    month_budget_units: digits(row.month_budget_units ?? null),
    // Lists as compact JSON text: an audit value is a scalar.
    budget_alert_percentages: row.budget_alert_percentages == null ? null : row.budget_alert_percentages.join(','),
    targets: row.targets == null ? null : row.targets.map((target) => `${target.target_id}${target.month_cap_units === null ? '' : `=${target.month_cap_units.toString()}`}`).join(','),
  };
}

/** A policy's fields as statement parameters (a velocity field not set is NULL). */
const policyParameters = (policy: SpendPolicy) => ({
  cap: policy.per_authorization_cap_units,
  daily: policy.daily_cap_units,
  threshold: policy.approval_threshold_units,
  per_minute: policy.max_requests_per_minute ?? null,
  per_hour: policy.max_requests_per_hour ?? null,
  suspend_after: policy.suspend_after_velocity_refusals ?? null,
  ...budgetParameters(policy),
});
const ASSIGN = `per_authorization_cap_units = @cap, daily_cap_units = @daily, approval_threshold_units = @threshold,
  max_requests_per_minute = @per_minute, max_requests_per_hour = @per_hour, suspend_after_velocity_refusals = @suspend_after, ${BUDGET_ASSIGN}`;
// IS NOT: NULL-safe, so setting or clearing a velocity field of the default is a change too.
const DIFFERS = `per_authorization_cap_units != @cap OR daily_cap_units != @daily OR approval_threshold_units != @threshold
  OR max_requests_per_minute IS NOT @per_minute OR max_requests_per_hour IS NOT @per_hour OR suspend_after_velocity_refusals IS NOT @suspend_after OR ${BUDGET_DIFFERS}`;

export type AdminStore = ReturnType<typeof createAdminStore>;

export function createAdminStore(db: Database.Database) {
  // Prepared once, as in ledger-store.ts.
  const statements = {
    agentById: db.prepare('SELECT * FROM agents WHERE agent_id = ?'),
    agentByName: db.prepare('SELECT 1 FROM agents WHERE name = ?'),
    agents: db.prepare('SELECT * FROM agents ORDER BY created_at, name'),
    insertAgent: db.prepare(
      "INSERT INTO agents (agent_id, name, status, created_at) VALUES (?, ?, 'active', ?)",
    ),
    policyOf: db.prepare('SELECT * FROM policies WHERE agent_id = ?'),
    insertDefaultPolicy: db.prepare(
      `INSERT INTO policies (agent_id, per_authorization_cap_units, daily_cap_units, approval_threshold_units, units_scale, currency, version, updated_at, follows_default,
         max_requests_per_minute, max_requests_per_hour, suspend_after_velocity_refusals,
         day_budget_units, week_budget_units, month_budget_units, budget_alert_percentages, targets)
       VALUES (@agent_id, @cap, @daily, @threshold, 6, 'USD', 1, @now, 1, @per_minute, @per_hour, @suspend_after,
         @day_budget, @week_budget, @month_budget, @alert_percentages, @targets)`,
    ),
    followersToChange: db.prepare(
      `SELECT agent_id FROM policies WHERE follows_default = 1 AND (${DIFFERS}) ORDER BY agent_id`,
    ),
    applyDefault: db.prepare(
      `UPDATE policies SET ${ASSIGN}, version = version + 1, updated_at = @now
       WHERE follows_default = 1 AND (${DIFFERS})`,
    ),
    setPolicy: db.prepare(`UPDATE policies SET ${ASSIGN}, version = version + 1, updated_at = @now, follows_default = 0 WHERE agent_id = @agent_id`),
  };

  return {
    /** Runs `fn` in one IMMEDIATE transaction: what it reads, checks and writes commits together. */
    immediate: immediateTransaction(db),

    agent: (agentId: string) => statements.agentById.get(agentId) as AgentRow | undefined,
    agentNamed: (name: string) => statements.agentByName.get(name) !== undefined,
    agents: () => statements.agents.all() as AgentRow[],
    insertAgent(agentId: string, name: string, at: number): void {
      statements.insertAgent.run(agentId, name, at);
    },
    /** The agent's first policy (version 1), following the default. */
    insertDefaultPolicy(agentId: string, policy: SpendPolicy, at: number): void {
      statements.insertDefaultPolicy.run({ ...policyParameters(policy), agent_id: agentId, now: at });
    },

    policy: (agentId: string) => policyOf(statements.policyOf.get(agentId) as StoredPolicyRow),
    /** The agents that follow the default policy and whose policy differs from `policy`, by agent id. */
    followersToChange: (policy: SpendPolicy) => (statements.followersToChange.all(policyParameters(policy)) as { agent_id: string }[]).map((row) => row.agent_id),
    /** Gives every agent that follows the default policy `policy`, with a new version where it changes. */
    applyDefault(policy: SpendPolicy, at: number): void {
      statements.applyDefault.run({ ...policyParameters(policy), now: at });
    },
    /** The agent's own policy, with a new version; it no longer follows the default. */
    setPolicy(agentId: string, policy: SpendPolicy, at: number): void {
      statements.setPolicy.run({ ...policyParameters(policy), agent_id: agentId, now: at });
    },
  };
}
