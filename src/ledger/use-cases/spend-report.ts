import type { Calendar } from '../../domain/calendar-period.js';
import { UNITS_SCALE } from '../../domain/money.js';
import { LedgerError } from '../ledger-error.js';
import type { ReportStore } from '../store/report-store.js';
import { summariseSpend, type SpendGrouping, type SpendTally } from '../summarise-spend.js';
import type { LedgerSpendReport } from '../wire/answers.js';

/** A bound of a report's range: a calendar date (its first instant in the installation's zone) or an instant (ms). */
export type SpendBound = { readonly date: string } | { readonly at: number };

export interface SpendReportQuery {
  readonly by: SpendGrouping;
  /** From this bound on (inclusive); null: from the first settlement. */
  readonly since: SpendBound | null;
  /** Before this bound (exclusive); null: up to now. */
  readonly until: SpendBound | null;
  /** Each group's amounts per agent or per target too (a chart's series); null: none. */
  readonly split: 'agent' | 'target' | null;
}

export interface SpendReportContext {
  readonly reports: ReportStore;
  readonly now: () => number;
  /** The installation's calendar (its IANA time zone): calendar periods and plain dates are read in it. */
  readonly calendar: Calendar;
}

const wire = (group: SpendTally) => ({
  settled_units: group.settledUnits,
  settled_count: group.settledCount,
  held_units: group.heldUnits,
  held_count: group.heldCount,
});

/**
 * A spend report (`GET /reports/spend`, docs/ledger.md "Spend reports"): settled amounts per
 * group from the settlement rows settled in the range, and — apart — the amounts held now by
 * authorizations requested in the range. `since` not before `until`, or the range is refused
 * (`invalid_request`, field `until`).
 */
export function spendReport(context: SpendReportContext, query: SpendReportQuery): LedgerSpendReport {
  const instant = (bound: SpendBound | null) => (bound === null ? null : 'date' in bound ? context.calendar.startOfDate(bound.date) : bound.at);
  const since = instant(query.since);
  const until = instant(query.until);
  if (since !== null && until !== null && since >= until) throw new LedgerError('invalid', 'invalid_request', { reasonCode: 'empty_range', fields: ['until'] });
  const now = context.now();
  const rows = context.reports.read({ since, until }, now);
  const label = (kind: string, key: string) => (kind === 'agent' ? (rows.agentNames.get(key) ?? key) : key);
  const summary = summariseSpend({ by: query.by, split: query.split ?? undefined, calendar: context.calendar, settlements: rows.settlements, holds: rows.holds });
  return {
    by: query.by,
    time_zone: context.calendar.timeZone,
    since: since === null ? null : new Date(since).toISOString(),
    until: until === null ? null : new Date(until).toISOString(),
    as_of: new Date(now).toISOString(),
    units_scale: UNITS_SCALE,
    currency: 'USD',
    groups: summary.groups.map((group) => ({
      group: group.group,
      label: label(query.by, group.group),
      ...wire(group),
      ...(group.parts === undefined ? {} : { parts: group.parts.map((part) => ({ part: part.part, label: label(query.split ?? '', part.part), ...wire(part) })) }),
    })),
    total: wire(summary.total),
  };
}
