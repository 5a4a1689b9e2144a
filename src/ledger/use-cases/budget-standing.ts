import type { Calendar } from '../../domain/calendar-period.js';
import type { LedgerBudgetStanding } from '../wire/answers.js';
import type { SpendPolicy } from '../authorization-rules.js';
import {
  agentBudgets,
  decideBudgets,
  installationBudgets,
  remainingUnits,
  type Budget,
  type BudgetCrossing,
  type BudgetDecision,
  type BudgetStanding,
} from '../budget-rules.js';
import type { BudgetStore } from '../store/budget-store.js';
import type { LedgerContext } from './current-authorization.js';

/*
 * Budgets at work (docs/ledger.md "Budgets"): each budget's standing read in the caller's
 * transaction, the request decided against them (budget-rules.ts), the alerts a hold makes cross
 * written as events in the hold's transaction, and every budget's standing for the spending
 * answers and the metrics.
 */

export interface BudgetContext extends LedgerContext {
  readonly budgets: BudgetStore;
  /** The installation's calendar (its time zone). */
  readonly calendar: Calendar;
}

/** The installation scope's key in `budget_alerts` (an agent's is its id). */
const INSTALLATION_SCOPE = 'installation';

/** Reads one budget's standing in the period `at` falls in. */
function standingOf(context: BudgetContext, budget: Budget, agentId: string, at: number): BudgetStanding {
  const period = context.calendar.bounds(budget.period, at);
  const units = context.budgets.unitsIn({
    agentId: budget.scope === 'installation' ? null : agentId,
    targetId: budget.scope === 'target' ? budget.targetId : null,
    since: period.start,
    now: at,
  });
  return { ...budget, periodStart: period.start, periodEnd: period.end, spentUnits: units.spent, heldUnits: units.held };
}

/**
 * The standings of every budget over the agent now: its own (with `onlyTarget`, of its target
 * caps only that target's) and the installation's. Call it inside a transaction.
 */
export function budgetStandings(context: BudgetContext, agentId: string, policy: SpendPolicy, at: number, onlyTarget?: string | null): BudgetStanding[] {
  const budgets = [...agentBudgets(policy, onlyTarget), ...installationBudgets(context.budgets.installationBudget())];
  return budgets.map((budget) => standingOf(context, budget, agentId, at));
}

/** Decides a request against the budgets over it (inside the request's transaction). */
export function decideRequestBudgets(context: BudgetContext, agentId: string, policy: SpendPolicy, targetId: string | null, amountUnits: bigint, at: number): BudgetDecision {
  // A request that names no target counts against no target's cap (with an allow-list it is refused before).
  return decideBudgets(budgetStandings(context, agentId, policy, at, targetId), amountUnits);
}

/**
 * Writes one `budget.threshold_crossed` event per alert percentage the hold made a budget reach,
 * the first time in the budget's period only (`budget_alerts`): inside the hold's transaction.
 */
export function recordCrossings(context: BudgetContext, agentId: string, crossings: readonly BudgetCrossing[], at: number, tokenId: string): void {
  for (const { standing, percent, committedUnits } of crossings) {
    const scope = standing.scope === 'installation' ? INSTALLATION_SCOPE : agentId;
    if (!context.budgets.recordAlert({ scope, budget: standing.name, periodStart: standing.periodStart, percent, at })) continue;
    context.events.append({
      type: 'budget.threshold_crossed',
      at,
      agentId,
      targetId: standing.targetId,
      tokenId,
      details: {
        budget: standing.name,
        scope: standing.scope,
        period: standing.period,
        period_start: new Date(standing.periodStart).toISOString(),
        percent,
        limit_units: standing.limitUnits.toString(),
        committed_units: committedUnits.toString(),
      },
    });
  }
}

/** A standing as the API shows it. */
export function standingView(standing: BudgetStanding): LedgerBudgetStanding {
  return {
    name: standing.name,
    period: standing.period,
    period_start: new Date(standing.periodStart).toISOString(),
    period_end: new Date(standing.periodEnd).toISOString(),
    limit_units: standing.limitUnits,
    spent_units: standing.spentUnits,
    held_units: standing.heldUnits,
    remaining_units: remainingUnits(standing),
    alert_percentages: [...standing.alertPercentages],
  };
}

/** One budget's standing for the metrics: whose (an agent id, or null for the installation). */
export interface BudgetStandingEntry extends LedgerBudgetStanding {
  readonly agent_id: string | null;
}

/**
 * Every budget's standing now, on one snapshot: each agent's own (calendar budgets and target
 * caps) and the installation's once (agent_id null). For the Prometheus metrics' budget gauges:
 * it only reads, so it takes no write lock (a scrape never holds up a spend request).
 */
export function allBudgetStandings(context: BudgetContext): BudgetStandingEntry[] {
  return context.store.snapshot(() => {
    const at = context.now();
    const entries: BudgetStandingEntry[] = [];
    for (const policy of context.store.policies()) {
      for (const budget of agentBudgets(policy)) entries.push({ agent_id: policy.agent_id, ...standingView(standingOf(context, budget, policy.agent_id, at)) });
    }
    for (const budget of installationBudgets(context.budgets.installationBudget())) entries.push({ agent_id: null, ...standingView(standingOf(context, budget, '', at)) });
    return entries;
  });
}
