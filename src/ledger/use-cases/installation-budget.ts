import { UNITS_SCALE } from '../../domain/money.js';
import type { LedgerInstallationBudget, LedgerInstallationBudgetAnswer } from '../wire/answers.js';
import type { InstallationBudget } from '../budget-rules.js';
import { versionMismatch } from '../ledger-error.js';
import type { AuditStore, CredentialActor } from '../store/audit-store.js';
import type { InstallationBudgetRecord } from '../store/budget-store.js';
import { budgetStandings, standingView, type BudgetContext } from './budget-standing.js';

/*
 * The installation-wide budget across all agents (docs/ledger.md "Budgets"): one record,
 * versioned like a policy (`PUT /budgets/installation` with `If-Match`), audited as a
 * `budget_changed` of subject `installation_budget` (before ledger migration 14 it was a
 * `policy_changed` of that subject; those events stay as they were written).
 */

export interface InstallationBudgetContext extends BudgetContext {
  readonly audit: AuditStore;
}

const SUBJECT = 'installation_budget';

function budgetView(record: InstallationBudgetRecord, timeZone: string): LedgerInstallationBudget {
  return {
    day_budget_units: record.day_budget_units,
    week_budget_units: record.week_budget_units,
    month_budget_units: record.month_budget_units,
    alert_percentages: [...record.alert_percentages],
    units_scale: UNITS_SCALE,
    currency: 'USD',
    time_zone: timeZone,
    version: record.version,
    updated_at: new Date(record.updated_at).toISOString(),
  };
}

function auditState(record: InstallationBudgetRecord) {
  const digits = (value: bigint | null) => (value === null ? null : value.toString());
  return {
    version: record.version.toString(),
    day_budget_units: digits(record.day_budget_units),
    week_budget_units: digits(record.week_budget_units),
    month_budget_units: digits(record.month_budget_units),
    alert_percentages: record.alert_percentages.join(','),
  };
}

function answer(context: InstallationBudgetContext): LedgerInstallationBudgetAnswer {
  const at = context.now();
  const record = context.budgets.installationBudget();
  const standing = budgetStandings(context, '', { per_authorization_cap_units: 0n, daily_cap_units: 0n, approval_threshold_units: 0n }, at).filter(
    (entry) => entry.scope === 'installation',
  );
  return { budget: budgetView(record, context.calendar.timeZone), standing: standing.map(standingView) };
}

/** The installation budget and its standing in the current periods. */
export function showInstallationBudget(context: InstallationBudgetContext): LedgerInstallationBudgetAnswer {
  return context.store.immediate(() => answer(context));
}

/**
 * Replaces the installation budget; with `expectedVersion` (`If-Match`) only if it is still at
 * that version (412 `budget_version_mismatch` with the current version otherwise, nothing changed).
 */
export function setInstallationBudget(context: InstallationBudgetContext, budget: InstallationBudget, actor: CredentialActor, expectedVersion: bigint | null): LedgerInstallationBudgetAnswer {
  return context.store.immediate(() => {
    const current = context.budgets.installationBudget();
    if (expectedVersion !== null && current.version !== expectedVersion) throw versionMismatch('budget_version_mismatch', current.version);
    const at = context.now();
    context.budgets.setInstallationBudget(budget, at);
    const changed = context.budgets.installationBudget();
    context.audit.record({ actor, action: 'budget_changed', agentId: null, subjectId: SUBJECT, before: auditState(current), after: auditState(changed), at });
    return answer(context);
  });
}
