import type { LedgerBudgetStanding, LedgerInstallationBudget } from '../wire/answers.js';
import type { LedgerConnector } from './ledger-connector.js';

/*
 * `lexec ledger budget show|set`: the installation-wide budget across all agents (docs/ledger.md
 * "Budgets"). A set changes only what its flags name and keeps the rest, from the version it read
 * (or the one `--expect-version` names): a change made meanwhile is never overwritten.
 */

export interface BudgetShowResult {
  readonly budget: LedgerInstallationBudget;
  /** Each budget set, in its current period. */
  readonly standing: readonly LedgerBudgetStanding[];
}

export interface BudgetSetResult extends BudgetShowResult {
  /** The version the change was made from. */
  readonly expected_version: bigint;
}

/** A change to the installation budget: `undefined` keeps a field, `null` removes a period's budget. */
export interface BudgetChange {
  readonly day_budget_units?: bigint | null;
  readonly week_budget_units?: bigint | null;
  readonly month_budget_units?: bigint | null;
  readonly alert_percentages?: number[];
  readonly expectVersion: bigint | null;
}

export async function showLedgerBudget(request: { readonly target: LedgerConnector }): Promise<BudgetShowResult> {
  const client = await request.target('admin');
  return client.installationBudget();
}

export async function setLedgerBudget(request: { readonly target: LedgerConnector; readonly change: BudgetChange }): Promise<BudgetSetResult> {
  const client = await request.target('admin');
  const { change } = request;
  const current = (await client.installationBudget()).budget;
  const expected = change.expectVersion ?? current.version;
  const keep = <T>(value: T | undefined, was: T) => (value === undefined ? was : value);
  const answer = await client.setInstallationBudget(
    {
      day_budget_units: keep(change.day_budget_units, current.day_budget_units),
      week_budget_units: keep(change.week_budget_units, current.week_budget_units),
      month_budget_units: keep(change.month_budget_units, current.month_budget_units),
      alert_percentages: change.alert_percentages ?? current.alert_percentages,
    },
    expected,
  );
  return { ...answer, expected_version: expected };
}
