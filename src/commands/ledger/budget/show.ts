import { LexecCommand } from '../../../cli/lexec-command.js';
import { ledgerTarget, ledgerTargetFlags } from '../../../cli/ledger-flags.js';
import type { Output } from '../../../terminal/output.js';
import { renderInstallationBudget } from '../../../ledger/client/render-ledger.js';
import { showLedgerBudget, type BudgetShowResult } from '../../../ledger/client/ledger-budget.js';

export default class LedgerBudgetShow extends LexecCommand<BudgetShowResult> {
  static override summary = 'Show the installation-wide budget across all agents and its standing this day, week and month (admin token).';
  static override description =
    "Periods are calendar days, ISO weeks (Monday first) and months in the installation's time zone ([ledger] time_zone, default UTC). Spent is settled, held is live holds and claims, of the authorizations created in the period. An agent's own budgets are shown by `lexec ledger policy show`.";
  static override examples = ['<%= config.bin %> <%= command.id %>', '<%= config.bin %> <%= command.id %> --json'];
  static override flags = { ...ledgerTargetFlags };

  protected override async execute(): Promise<BudgetShowResult> {
    const { flags } = await this.parse(LedgerBudgetShow);
    return showLedgerBudget({ target: ledgerTarget(flags) });
  }

  protected override renderHuman(result: BudgetShowResult, output: Output): void {
    renderInstallationBudget(result, output);
  }
}
