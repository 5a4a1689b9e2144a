import type Database from 'better-sqlite3';
import { BugError } from '../../errors.js';
import { WINDOW_SUMS } from './counted-units.js';
import type { BudgetPolicy, InstallationBudget, TargetAllowance } from '../budget-rules.js';

/*
 * The ledger's SQL for budgets (ledger migration 11; docs/ledger.md "Budgets"): the budget columns
 * of a policy row (JSON text for the lists), the installation budget's one row, what was settled
 * and held in a period, and the alert percentages already crossed. It decides nothing: the rules
 * are budget-rules.ts, the decision the request's use case.
 */

/** The budget columns of a `policies` row as stored. */
export interface BudgetColumns {
  day_budget_units: bigint | null;
  week_budget_units: bigint | null;
  month_budget_units: bigint | null;
  budget_alert_percentages: string | null;
  targets: string | null;
}

interface StoredTarget {
  target_id: string;
  month_cap_units: string | null;
}

/** The budget part of a policy read from its row's columns. */
export function budgetPolicyOf(row: BudgetColumns): Required<{ [K in keyof BudgetPolicy]: NonNullable<BudgetPolicy[K]> | null }> {
  const targets = row.targets === null ? null : (JSON.parse(row.targets) as StoredTarget[]).map((target): TargetAllowance => ({
    target_id: target.target_id,
    month_cap_units: target.month_cap_units === null ? null : BigInt(target.month_cap_units),
  }));
  return {
    day_budget_units: row.day_budget_units,
    week_budget_units: row.week_budget_units,
    month_budget_units: row.month_budget_units,
    budget_alert_percentages: row.budget_alert_percentages === null ? null : (JSON.parse(row.budget_alert_percentages) as number[]),
    targets,
  };
}

/** A policy's budget fields as statement parameters (not set: NULL; lists as JSON text, amounts as digit strings). */
export function budgetParameters(policy: BudgetPolicy) {
  return {
    day_budget: policy.day_budget_units ?? null,
    week_budget: policy.week_budget_units ?? null,
    month_budget: policy.month_budget_units ?? null,
    alert_percentages: policy.budget_alert_percentages == null ? null : JSON.stringify(policy.budget_alert_percentages),
    targets:
      policy.targets == null
        ? null
        : JSON.stringify(policy.targets.map((target) => ({ target_id: target.target_id, month_cap_units: target.month_cap_units?.toString() ?? null }))),
  };
}
export const BUDGET_ASSIGN = `day_budget_units = @day_budget, week_budget_units = @week_budget, month_budget_units = @month_budget,
  budget_alert_percentages = @alert_percentages, targets = @targets`;
export const BUDGET_DIFFERS = `day_budget_units IS NOT @day_budget OR week_budget_units IS NOT @week_budget OR month_budget_units IS NOT @month_budget
  OR budget_alert_percentages IS NOT @alert_percentages OR targets IS NOT @targets`;

/** The installation budget with its version. */
export interface InstallationBudgetRecord extends InstallationBudget {
  readonly version: bigint;
  readonly updated_at: number;
}

interface InstallationBudgetRow {
  day_budget_units: bigint | null;
  week_budget_units: bigint | null;
  month_budget_units: bigint | null;
  alert_percentages: string;
  version: bigint;
  updated_at: bigint;
}

/** Which authorizations a budget counts, created from `since` on (inclusive); holds still live at `now`. */
export interface BudgetWindow {
  readonly agentId: string | null;
  readonly targetId: string | null;
  readonly since: number;
  readonly now: number;
}

export type BudgetStore = ReturnType<typeof createBudgetStore>;

export function createBudgetStore(db: Database.Database) {
  const statements = {
    // The amounts the rolling daily cap counts (counted-units.ts), split into settled and held; one statement per scope.
    agentUnits: db.prepare(WINDOW_SUMS.periodAgent),
    targetUnits: db.prepare(WINDOW_SUMS.periodTarget),
    installationUnits: db.prepare(WINDOW_SUMS.periodInstallation),
    installation: db.prepare('SELECT * FROM installation_budget WHERE singleton = 1'),
    setInstallation: db.prepare(
      `UPDATE installation_budget SET day_budget_units = @day, week_budget_units = @week, month_budget_units = @month,
         alert_percentages = @alert_percentages, version = version + 1, updated_at = @now WHERE singleton = 1`,
    ),
    recordAlert: db.prepare('INSERT OR IGNORE INTO budget_alerts (scope, budget, period_start, percent, at) VALUES (?, ?, ?, ?, ?)'),
  };

  return {
    /** Settled and held amounts of the authorizations a budget counts. */
    unitsIn(window: BudgetWindow): { spent: bigint; held: bigint } {
      const parameters = { agent_id: window.agentId, target_id: window.targetId, since: window.since, now: window.now };
      if (window.agentId === null) return statements.installationUnits.get(parameters) as { spent: bigint; held: bigint };
      if (window.targetId === null) return statements.agentUnits.get(parameters) as { spent: bigint; held: bigint };
      return statements.targetUnits.get(parameters) as { spent: bigint; held: bigint };
    },

    installationBudget(): InstallationBudgetRecord {
      const row = statements.installation.get() as InstallationBudgetRow | undefined;
      if (row === undefined) throw new BugError('the installation budget row is missing (ledger migration 11 inserts it)');
      return {
        day_budget_units: row.day_budget_units,
        week_budget_units: row.week_budget_units,
        month_budget_units: row.month_budget_units,
        alert_percentages: JSON.parse(row.alert_percentages) as number[],
        version: row.version,
        updated_at: Number(row.updated_at),
      };
    },
    /** Replaces the installation budget, with a new version. */
    setInstallationBudget(budget: InstallationBudget, at: number): void {
      statements.setInstallation.run({
        day: budget.day_budget_units,
        week: budget.week_budget_units,
        month: budget.month_budget_units,
        alert_percentages: JSON.stringify(budget.alert_percentages),
        now: at,
      });
    },

    /**
     * Records that a budget crossed an alert percentage in the period starting at `periodStart`;
     * true only the first time (the table's primary key), so its event is written once.
     */
    recordAlert(alert: { scope: string; budget: string; periodStart: number; percent: number; at: number }): boolean {
      return statements.recordAlert.run(alert.scope, alert.budget, alert.periodStart, alert.percent, alert.at).changes === 1;
    },
  };
}
