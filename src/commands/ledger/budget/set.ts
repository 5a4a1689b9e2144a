import { Flags } from '@oclif/core';
import { alertPercentagesFlag, budgetUnitsFlag, versionFlag } from '../../../cli/flag-values.js';
import { LexecCommand } from '../../../cli/lexec-command.js';
import { ledgerTarget, ledgerTargetFlags } from '../../../cli/ledger-flags.js';
import type { Output } from '../../../terminal/output.js';
import { renderInstallationBudget } from '../../../ledger/client/render-ledger.js';
import { setLedgerBudget, type BudgetSetResult } from '../../../ledger/client/ledger-budget.js';

export default class LedgerBudgetSet extends LexecCommand<BudgetSetResult> {
  static override summary = 'Change the installation-wide budget across all agents (admin token).';
  static override description =
    'Only the flags given change; the rest is kept. Amounts are micro-units (1 USD = 1000000), or `none` to remove that period\'s budget. The change is made from the version read (or the one --expect-version names): if someone changed the budget meanwhile, nothing changes and the error names the current version.';
  static override examples = [
    '<%= config.bin %> <%= command.id %> --month-units 500000000 --alert-percentages 50,80,100',
    '<%= config.bin %> <%= command.id %> --day-units none --expect-version 3',
  ];
  static override flags = {
    ...ledgerTargetFlags,
    'day-units': Flags.string({ summary: "The budget of each calendar day, in micro-units, or `none`." }),
    'week-units': Flags.string({ summary: 'The budget of each ISO week (Monday first), in micro-units, or `none`.' }),
    'month-units': Flags.string({ summary: 'The budget of each calendar month, in micro-units, or `none`.' }),
    'alert-percentages': Flags.string({ summary: 'When to alert (a budget.threshold_crossed event): whole numbers 1-100, comma-separated (default 50,80,100).' }),
    'expect-version': Flags.string({ summary: 'Change it only if the budget is still at this version (as `ledger budget show` shows it).' }),
  };

  protected override async execute(): Promise<BudgetSetResult> {
    const { flags } = await this.parse(LedgerBudgetSet);
    const units = (name: 'day-units' | 'week-units' | 'month-units') => {
      const value = flags[name];
      return value === undefined ? {} : { [name.replace('-units', '_budget_units')]: budgetUnitsFlag(value, `--${name}`) };
    };
    return setLedgerBudget({
      target: ledgerTarget(flags),
      change: {
        ...units('day-units'),
        ...units('week-units'),
        ...units('month-units'),
        ...(flags['alert-percentages'] === undefined ? {} : { alert_percentages: alertPercentagesFlag(flags['alert-percentages']) }),
        expectVersion: flags['expect-version'] === undefined ? null : versionFlag(flags['expect-version'], '--expect-version'),
      },
    });
  }

  protected override renderHuman(result: BudgetSetResult, output: Output): void {
    renderInstallationBudget(result, output);
  }
}
