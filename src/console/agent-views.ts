import type { LedgerAgent, LedgerBudgetStanding, LedgerInstallationBudgetAnswer, LedgerPolicy, LedgerSpending } from '../ledger/wire/answers.js';
import { maybeMoney, money } from './money-view.js';

/*
 * The console's views of agents, their policies and the budgets over them (console-views.ts
 * holds the others, on the same rules: fields picked one by one, amounts as digit strings).
 */

const maybeCount = (count: bigint | null | undefined): string | null => (count == null ? null : count.toString());

/** Every limit of an agent's policy: the caps, the runaway-loop breaker, the calendar budgets and the target allow-list (null: any target). */
export function policyView(policy: LedgerPolicy) {
  return {
    per_authorization_cap: money(policy.per_authorization_cap_units, policy.currency),
    daily_cap: money(policy.daily_cap_units, policy.currency),
    approval_threshold: money(policy.approval_threshold_units, policy.currency),
    velocity: {
      max_requests_per_minute: maybeCount(policy.max_requests_per_minute),
      max_requests_per_hour: maybeCount(policy.max_requests_per_hour),
      suspend_after_velocity_refusals: maybeCount(policy.suspend_after_velocity_refusals),
    },
    budgets: {
      day: maybeMoney(policy.day_budget_units ?? null, policy.currency),
      week: maybeMoney(policy.week_budget_units ?? null, policy.currency),
      month: maybeMoney(policy.month_budget_units ?? null, policy.currency),
      alert_percentages: policy.budget_alert_percentages ?? [],
    },
    targets: policy.targets?.map((target) => ({ target_id: target.target_id, month_cap: maybeMoney(target.month_cap_units, policy.currency) })) ?? null,
    source: policy.source,
    version: policy.version.toString(),
    updated_at: policy.updated_at,
  };
}

export function agentView(agent: LedgerAgent, spending: LedgerSpending) {
  return {
    agent_id: agent.agent_id,
    name: agent.name,
    status: agent.status,
    /** When an operator suspended it and why (null while active). */
    suspended_at: agent.suspended_at ?? null,
    suspension_reason: agent.suspension_reason ?? null,
    window: spending.window,
    spent: money(spending.spent_units, spending.currency),
    held: money(spending.held_units, spending.currency),
    remaining: money(spending.remaining_units, spending.currency),
    policy: policyView(spending.policy),
    /** Every calendar budget the agent is under (its own, per target, the installation's), in its current period. */
    budgets: spending.budgets.map((budget) => budgetStandingView(budget, spending.currency)),
    /** The installation's time zone, in which the periods are cut (null from an older ledger). */
    time_zone: spending.time_zone ?? null,
  };
}

/** The installation-wide budget (across all agents), with its version to change it from, and each of its budgets' standing. */
export function installationBudgetView(answer: LedgerInstallationBudgetAnswer) {
  const { budget } = answer;
  return {
    day: maybeMoney(budget.day_budget_units, budget.currency),
    week: maybeMoney(budget.week_budget_units, budget.currency),
    month: maybeMoney(budget.month_budget_units, budget.currency),
    alert_percentages: budget.alert_percentages,
    time_zone: budget.time_zone,
    version: budget.version.toString(),
    updated_at: budget.updated_at,
    standing: answer.standing.map((standing) => budgetStandingView(standing, budget.currency)),
  };
}

/** A budget's standing in its period: `agent.month`, `target:<id>`, `installation.day`, …; spent and held of the period, what remains. */
export function budgetStandingView(budget: LedgerBudgetStanding, currency: string) {
  return {
    name: budget.name,
    period: budget.period,
    period_start: budget.period_start,
    period_end: budget.period_end,
    limit: money(budget.limit_units, currency),
    spent: money(budget.spent_units, currency),
    held: money(budget.held_units, currency),
    remaining: money(budget.remaining_units, currency),
    alert_percentages: budget.alert_percentages,
  };
}
