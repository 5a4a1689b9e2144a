import { formatUnits } from '../../domain/money.js';
import type { Output } from '../../terminal/output.js';
import { plain } from '../../terminal/plain-text.js';
import { table } from '../../terminal/table.js';
import type { SpendResult } from './ledger-spend.js';

const HEADINGS = { agent: 'agent', target: 'target', day: 'day', week: 'week (Monday)', month: 'month' } as const;

/** `ledger spend` as a table: per group settled and held (exact USD), their counts, and a total line. */
export function renderSpendReport(report: SpendResult, output: Output): void {
  const range = `${report.since ?? 'the first settlement'} to ${report.until ?? 'now'}`;
  output.line(`Spend settled from ${range}, by ${report.by} (${plain(report.time_zone)}); held as of ${report.as_of}.`);
  if (report.groups.length === 0) {
    output.line('Nothing settled or held in this range.');
    return;
  }
  const usd = (units: bigint) => formatUnits(units, plain(report.currency));
  const header = [HEADINGS[report.by], 'settled', 'settlements', 'held', 'holds'];
  const rows = report.groups.map((group) => [plain(group.label), usd(group.settled_units), String(group.settled_count), usd(group.held_units), String(group.held_count)]);
  const total = ['total', usd(report.total.settled_units), String(report.total.settled_count), usd(report.total.held_units), String(report.total.held_count)];
  for (const line of table([header, ...rows, total])) output.line(line);
}
