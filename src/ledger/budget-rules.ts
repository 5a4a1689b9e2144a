import type { CalendarPeriod } from '../domain/calendar-period.js';

/*
 * Pure rules of the calendar budgets (docs/ledger.md "Budgets"). A budget is a limit on what an
 * agent (`agent.day|week|month`), one target of an agent (`target:<target_id>`, per calendar
 * month) or the whole installation (`installation.day|week|month`) commits in a calendar period
 * of the installation's time zone. Committed is what the rolling daily cap counts — live holds,
 * claims and settled amounts — of the authorizations created in the period. No I/O here: the
 * request's use case reads each budget's standing and decides in the transaction that holds.
 */

/** Alert percentages of a budget that sets none. */
export const DEFAULT_ALERT_PERCENTAGES: readonly number[] = [50, 80, 100];

/** One allowed target of an agent and its optional cap per calendar month (null: no cap of its own). */
export interface TargetAllowance {
  readonly target_id: string;
  readonly month_cap_units: bigint | null;
}

/** The budget part of an agent's policy: each optional, null or absent when not set. */
export interface BudgetPolicy {
  readonly day_budget_units?: bigint | null | undefined;
  readonly week_budget_units?: bigint | null | undefined;
  readonly month_budget_units?: bigint | null | undefined;
  /** The alert percentages of all the agent's budgets (null: 50, 80, 100). */
  readonly budget_alert_percentages?: number[] | null | undefined;
  /** The targets the agent may pay for (null: any, and a request need not name one). */
  readonly targets?: TargetAllowance[] | null | undefined;
}

/** The installation-wide budget across all agents (one row, versioned like a policy). */
export interface InstallationBudget {
  readonly day_budget_units: bigint | null;
  readonly week_budget_units: bigint | null;
  readonly month_budget_units: bigint | null;
  readonly alert_percentages: readonly number[];
}

export type BudgetScope = 'agent' | 'target' | 'installation';

/** One budget as set: what it limits, over which period, and when it alerts. */
export interface Budget {
  readonly name: string;
  readonly scope: BudgetScope;
  readonly period: CalendarPeriod;
  readonly limitUnits: bigint;
  readonly alertPercentages: readonly number[];
  /** The target of a `target:` budget. */
  readonly targetId: string | null;
}

/** A budget's standing in its current period: settled and held of the authorizations created in it. */
export interface BudgetStanding extends Budget {
  readonly periodStart: number;
  readonly periodEnd: number;
  readonly spentUnits: bigint;
  readonly heldUnits: bigint;
}

const PERIOD_FIELDS = [
  ['day', 'day_budget_units'],
  ['week', 'week_budget_units'],
  ['month', 'month_budget_units'],
] as const;

/**
 * The budgets an agent's policy sets, in the order a refusal names them: its calendar budgets,
 * then the caps of its allowed targets — all of them, or with `onlyTarget` only that one's.
 */
export function agentBudgets(policy: BudgetPolicy, onlyTarget?: string | null): Budget[] {
  const alertPercentages = policy.budget_alert_percentages ?? DEFAULT_ALERT_PERCENTAGES;
  const budgets: Budget[] = [];
  for (const [period, field] of PERIOD_FIELDS) {
    const limit = policy[field];
    if (limit != null) budgets.push({ name: `agent.${period}`, scope: 'agent', period, limitUnits: limit, alertPercentages, targetId: null });
  }
  for (const target of policy.targets ?? []) {
    if (target.month_cap_units === null || (onlyTarget !== undefined && target.target_id !== onlyTarget)) continue;
    budgets.push({ name: `target:${target.target_id}`, scope: 'target', period: 'month', limitUnits: target.month_cap_units, alertPercentages, targetId: target.target_id });
  }
  return budgets;
}

/** The installation's budgets, day, week, month, those set. */
export function installationBudgets(budget: InstallationBudget): Budget[] {
  return PERIOD_FIELDS.flatMap(([period, field]) => {
    const limit = budget[field];
    return limit === null ? [] : [{ name: `installation.${period}`, scope: 'installation' as const, period, limitUnits: limit, alertPercentages: budget.alert_percentages, targetId: null }];
  });
}

export type TargetDecision = { readonly outcome: 'allowed' } | { readonly outcome: 'refused'; readonly reason: 'target_required' | 'target_not_allowed' };

/** Whether the agent may pay for this target: any without an allow-list; with one, only a target it lists (and a request must name one). */
export function decideTarget(policy: BudgetPolicy, targetId: string | null): TargetDecision {
  if (policy.targets == null) return { outcome: 'allowed' };
  if (targetId === null) return { outcome: 'refused', reason: 'target_required' };
  return policy.targets.some((target) => target.target_id === targetId) ? { outcome: 'allowed' } : { outcome: 'refused', reason: 'target_not_allowed' };
}

export const committedUnits = (standing: BudgetStanding) => standing.spentUnits + standing.heldUnits;

/** What is left of a budget in its period (never below zero). */
export function remainingUnits(standing: BudgetStanding): bigint {
  const left = standing.limitUnits - committedUnits(standing);
  return left > 0n ? left : 0n;
}

/** An alert percentage a hold makes a budget's committed amount reach. */
export interface BudgetCrossing {
  readonly standing: BudgetStanding;
  readonly percent: number;
  /** Committed with the new hold. */
  readonly committedUnits: bigint;
}

export type BudgetDecision = { readonly outcome: 'within'; readonly crossings: readonly BudgetCrossing[] } | { readonly outcome: 'refused'; readonly standing: BudgetStanding };

/**
 * Decides a request of `amountUnits` against the budgets' standings: refused by the first budget
 * it would take past its limit; otherwise within, with every alert percentage the hold makes a
 * budget reach (committed before below it, with the hold at or above it: `before × 100 < limit ×
 * percent ≤ after × 100`, exact in bigint).
 */
export function decideBudgets(standings: readonly BudgetStanding[], amountUnits: bigint): BudgetDecision {
  const over = standings.find((standing) => committedUnits(standing) + amountUnits > standing.limitUnits);
  if (over !== undefined) return { outcome: 'refused', standing: over };
  const crossings: BudgetCrossing[] = [];
  for (const standing of standings) {
    const before = committedUnits(standing);
    const after = before + amountUnits;
    for (const percent of standing.alertPercentages) {
      const mark = standing.limitUnits * BigInt(percent);
      if (before * 100n < mark && mark <= after * 100n) crossings.push({ standing, percent, committedUnits: after });
    }
  }
  return { outcome: 'within', crossings };
}

/** The budget a refusal explains, as the error body's fields (amounts as digit strings, times ISO 8601). */
export function budgetRefusalDetails(standing: BudgetStanding, amountUnits: bigint): Record<string, string> {
  return {
    budget: standing.name,
    period: standing.period,
    period_start: new Date(standing.periodStart).toISOString(),
    period_end: new Date(standing.periodEnd).toISOString(),
    limit_units: standing.limitUnits.toString(),
    spent_units: standing.spentUnits.toString(),
    held_units: standing.heldUnits.toString(),
    committed_units: committedUnits(standing).toString(),
    remaining_units: remainingUnits(standing).toString(),
    requested_units: amountUnits.toString(),
  };
}
