import { periodOf, zoneReader, type CalendarPeriod } from './spend-periods.js';

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

export interface SpendGroup {
  readonly group: string;
  readonly settledUnits: bigint;
  readonly settledCount: number;
  readonly heldUnits: bigint;
  readonly heldCount: number;
}

export interface SpendSummary {
  readonly groups: readonly SpendGroup[];
  readonly total: Omit<SpendGroup, 'group'>;
}

interface Tally {
  settledUnits: bigint;
  settledCount: number;
  heldUnits: bigint;
  heldCount: number;
}

const blank = (): Tally => ({ settledUnits: 0n, settledCount: 0, heldUnits: 0n, heldCount: 0 });

/**
 * Sums settlements and holds per group: per agent (its id), per target (`(none)` for no
 * target), or per calendar day, ISO week (named by its Monday) or month in `timeZone`. Groups are
 * sorted by name — for periods, in time order. A group appears once it has a settlement or a hold.
 */
export function summariseSpend(input: {
  readonly by: SpendGrouping;
  readonly timeZone: string;
  readonly settlements: Iterable<SpendRow>;
  readonly holds: Iterable<SpendRow>;
}): SpendSummary {
  const reader = zoneReader(input.timeZone);
  const groupOf = (row: SpendRow): string => {
    if (input.by === 'agent') return row.agentId;
    if (input.by === 'target') return row.targetId ?? NO_TARGET;
    return periodOf(reader, row.at, input.by satisfies CalendarPeriod);
  };
  const tallies = new Map<string, Tally>();
  const tallyOf = (row: SpendRow): Tally => {
    const key = groupOf(row);
    let tally = tallies.get(key);
    if (tally === undefined) tallies.set(key, (tally = blank()));
    return tally;
  };
  const total = blank();
  for (const row of input.settlements) {
    const tally = tallyOf(row);
    tally.settledUnits += row.amountUnits;
    tally.settledCount += 1;
    total.settledUnits += row.amountUnits;
    total.settledCount += 1;
  }
  for (const row of input.holds) {
    const tally = tallyOf(row);
    tally.heldUnits += row.amountUnits;
    tally.heldCount += 1;
    total.heldUnits += row.amountUnits;
    total.heldCount += 1;
  }
  const groups = [...tallies.entries()]
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([group, tally]) => ({ group, ...tally }));
  return { groups, total };
}
