import type { Calendar, CalendarPeriod } from '../domain/calendar-period.js';

/*
 * A spend report's arithmetic (docs/ledger.md "Spend reports"), pure: the rows in, the groups
 * out. Every amount is a bigint sum of micro-units: nothing is rounded, so the groups' settled
 * amounts add up to exactly the settlements' amounts.
 */

export const SPEND_GROUPINGS = ['agent', 'target', 'day', 'week', 'month'] as const;
export type SpendGrouping = (typeof SPEND_GROUPINGS)[number];

/** The group of an authorization without a target (one made before targets were recorded, or whose agent named none). */
export const NO_TARGET = '(none)';

/** One settlement, or one live hold: whose, for which target, when (ms), how much. */
export interface SpendRow {
  readonly agentId: string;
  readonly targetId: string | null;
  /** A settlement: when it was settled. A hold: when it was requested. */
  readonly at: number;
  readonly amountUnits: bigint;
}

export interface SpendTally {
  readonly settledUnits: bigint;
  readonly settledCount: number;
  readonly heldUnits: bigint;
  readonly heldCount: number;
}

export interface SpendGroup extends SpendTally {
  readonly group: string;
  /** With a split: the group's amounts per agent or target (`part` its id), sorted; they add up to the group's. */
  readonly parts?: readonly (SpendTally & { readonly part: string })[];
}

export interface SpendSummary {
  readonly groups: readonly SpendGroup[];
  readonly total: SpendTally;
}

interface Tally {
  settledUnits: bigint;
  settledCount: number;
  heldUnits: bigint;
  heldCount: number;
  parts?: Map<string, Tally>;
}

const blank = (): Tally => ({ settledUnits: 0n, settledCount: 0, heldUnits: 0n, heldCount: 0 });
const byName = <T>([a]: [string, T], [b]: [string, T]) => (a < b ? -1 : a > b ? 1 : 0);
const plainTally = ({ settledUnits, settledCount, heldUnits, heldCount }: Tally): SpendTally => ({ settledUnits, settledCount, heldUnits, heldCount });
const add = (tally: Tally, units: bigint, kind: 'settled' | 'held') => {
  if (kind === 'settled') {
    tally.settledUnits += units;
    tally.settledCount += 1;
  } else {
    tally.heldUnits += units;
    tally.heldCount += 1;
  }
};

/**
 * Sums settlements and holds per group: per agent (its id), per target (`(none)` for no
 * target), or per calendar day, ISO week (named by its Monday) or month of `calendar` (its time zone). Groups are
 * sorted by name — for periods, in time order. A group appears once it has a settlement or a hold.
 * With `split`, each group also tells its amounts per agent or per target (a chart's series).
 */
export function summariseSpend(input: {
  readonly by: SpendGrouping;
  readonly split?: 'agent' | 'target' | undefined;
  readonly calendar: Calendar;
  readonly settlements: Iterable<SpendRow>;
  readonly holds: Iterable<SpendRow>;
}): SpendSummary {
  const keyOf = (row: SpendRow, by: SpendGrouping): string => {
    if (by === 'agent') return row.agentId;
    if (by === 'target') return row.targetId ?? NO_TARGET;
    return input.calendar.periodName(by satisfies CalendarPeriod, row.at);
  };
  const tallies = new Map<string, Tally>();
  const total = blank();
  const count = (row: SpendRow, kind: 'settled' | 'held') => {
    const key = keyOf(row, input.by);
    let tally = tallies.get(key);
    if (tally === undefined) tallies.set(key, (tally = blank()));
    add(tally, row.amountUnits, kind);
    add(total, row.amountUnits, kind);
    if (input.split === undefined) return;
    tally.parts ??= new Map();
    const partKey = keyOf(row, input.split);
    let part = tally.parts.get(partKey);
    if (part === undefined) tally.parts.set(partKey, (part = blank()));
    add(part, row.amountUnits, kind);
  };
  for (const row of input.settlements) count(row, 'settled');
  for (const row of input.holds) count(row, 'held');
  const groups = [...tallies.entries()].sort(byName).map(([group, tally]): SpendGroup => {
    const parts = tally.parts === undefined ? undefined : [...tally.parts.entries()].sort(byName).map(([part, partTally]) => ({ part, ...plainTally(partTally) }));
    return { group, ...plainTally(tally), ...(parts === undefined ? {} : { parts }) };
  });
  return { groups, total: plainTally(total) };
}
