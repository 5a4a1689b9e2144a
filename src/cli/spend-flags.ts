import { UsageError } from '../errors.js';
import { SPEND_GROUPINGS, type SpendGrouping } from '../ledger/summarise-spend.js';
import { spendBound } from '../ledger/wire/requests.js';

/* Flags of `lexec ledger spend`, checked as the ledger checks its query (usage errors, exit 2). */

const HELP = 'Run the command with --help to see its flags.';

export function spendGroupingFlag(value: string): SpendGrouping {
  const grouping = SPEND_GROUPINGS.find((candidate) => candidate === value);
  if (grouping === undefined) {
    throw new UsageError('invalid_flag_value', `--by must be one of ${SPEND_GROUPINGS.join(', ')}.`, { nextStep: HELP, issues: [{ path: '--by', message: `must be one of ${SPEND_GROUPINGS.join(', ')}` }] });
  }
  return grouping;
}

/** A date (2026-11-01) or an ISO 8601 time with its offset, passed on as written: the ledger reads a date in its own time zone. */
export function spendBoundFlag(value: string, name: string): string {
  if (!spendBound.safeParse(value).success) {
    const expected = 'a date (2026-11-01) or an ISO 8601 time with its offset (2026-11-01T09:00:00Z)';
    throw new UsageError('invalid_flag_value', `${name} must be ${expected}.`, { nextStep: HELP, issues: [{ path: name, message: `must be ${expected}` }] });
  }
  return value;
}
