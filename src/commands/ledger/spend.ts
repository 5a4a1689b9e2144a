import { Flags } from '@oclif/core';
import { LexecCommand } from '../../cli/lexec-command.js';
import { ledgerTarget, ledgerTargetFlags } from '../../cli/ledger-flags.js';
import { spendBoundFlag, spendGroupingFlag } from '../../cli/spend-flags.js';
import { UsageError } from '../../errors.js';
import type { Output } from '../../terminal/output.js';
import { readSpendReport, type SpendResult } from '../../ledger/client/ledger-spend.js';
import { renderSpendReport } from '../../ledger/client/render-spend.js';
import { spendCsv } from '../../ledger/client/spend-csv.js';

export default class LedgerSpend extends LexecCommand<SpendResult> {
  static override summary = 'Report settled spend, and what is held now, per agent, target, day, week or month (admin token).';
  static override description =
    'Exact sums of the settlement rows settled in the range (--since inclusive, --until exclusive; a plain date is read in the ledger\'s time zone), grouped by agent, target or calendar period (weeks start on Monday), and apart the amounts held now by authorizations requested in the range. --csv prints RFC 4180 CSV with amounts in USD and in micro-units.';
  static override examples = [
    '<%= config.bin %> <%= command.id %> --by agent',
    '<%= config.bin %> <%= command.id %> --by day --since 2026-11-01 --until 2026-12-01 --csv > november.csv',
    '<%= config.bin %> <%= command.id %> --by target --since 2026-11-25T00:00:00Z --json',
  ];
  static override flags = {
    ...ledgerTargetFlags,
    by: Flags.string({ summary: 'Group by agent, target, day, week or month.', required: true }),
    since: Flags.string({ summary: 'Only settlements from this date (2026-11-01, in the ledger\'s time zone) or ISO 8601 time with its offset on.' }),
    until: Flags.string({ summary: 'Only settlements before this date or time (exclusive).' }),
    csv: Flags.boolean({ default: false, summary: 'Print the report as CSV (RFC 4180) instead of a table.' }),
  };

  private csv = false;

  protected override async execute(): Promise<SpendResult> {
    const { flags } = await this.parse(LedgerSpend);
    if (flags.csv && flags.json) {
      throw new UsageError('usage_error', '--csv and --json cannot be used together.', { nextStep: 'Choose one output format.' });
    }
    this.csv = flags.csv;
    return readSpendReport({
      target: ledgerTarget(flags),
      by: spendGroupingFlag(flags.by),
      since: flags.since === undefined ? null : spendBoundFlag(flags.since, '--since'),
      until: flags.until === undefined ? null : spendBoundFlag(flags.until, '--until'),
    });
  }

  protected override renderHuman(result: SpendResult, output: Output): void {
    if (!this.csv) {
      renderSpendReport(result, output);
      return;
    }
    // output.line ends each record with LF: with the CR before it, each ends with CRLF as RFC 4180 says.
    for (const record of spendCsv(result).split('\r\n').slice(0, -1)) output.line(`${record}\r`);
  }
}
