import { decimalUnits } from '../../domain/money.js';
import type { LedgerSpendReport } from '../wire/answers.js';

/*
 * A spend report as CSV (RFC 4180: CRLF line ends, a header row, fields with a comma, quote or
 * line break quoted, quotes doubled), shared by `lexec ledger spend --csv` and the console's
 * download. Amounts twice: exact decimal USD and whole micro-units — never a float.
 */

function field(value: string): string {
  return /[",\r\n]/.test(value) ? `"${value.replaceAll('"', '""')}"` : value;
}

export const SPEND_CSV_HEADER = ['group', 'label', 'settled_usd', 'settled_units', 'settled_count', 'held_usd', 'held_units', 'held_count'] as const;

/** The rows of the CSV (header first, the total last with group `total`), each a list of fields. */
export function spendCsvRows(report: Pick<LedgerSpendReport, 'groups' | 'total'>): string[][] {
  const tally = (row: LedgerSpendReport['total']) => [
    decimalUnits(row.settled_units),
    row.settled_units.toString(),
    String(row.settled_count),
    decimalUnits(row.held_units),
    row.held_units.toString(),
    String(row.held_count),
  ];
  return [[...SPEND_CSV_HEADER], ...report.groups.map((group) => [group.group, group.label, ...tally(group)]), ['total', 'total', ...tally(report.total)]];
}

/** The whole CSV document, each record ended by CRLF. */
export function spendCsv(report: Pick<LedgerSpendReport, 'groups' | 'total'>): string {
  return spendCsvRows(report)
    .map((row) => `${row.map(field).join(',')}\r\n`)
    .join('');
}
