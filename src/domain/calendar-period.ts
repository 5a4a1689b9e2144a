/*
 * Calendar periods in an IANA time zone (docs/ledger.md "Budgets"): a day, an ISO week (Monday
 * first) or a month begins at local midnight of its first date and ends where the next begins. So
 * a day is 23 or 25 hours long across a daylight-saving change, and a period always starts at the
 * first instant whose local date is its first date (where a zone skips midnight, that is the
 * instant the clock jumps). Pure: the zone rules are the Intl API's (the ICU time zone database
 * Node carries), no clock and no I/O — the caller passes the instant.
 */

export const CALENDAR_PERIODS = ['day', 'week', 'month'] as const;
export type CalendarPeriod = (typeof CALENDAR_PERIODS)[number];

/** A period's bounds, ms since the epoch: `start` inclusive, `end` exclusive. */
export interface PeriodBounds {
  readonly start: number;
  readonly end: number;
}

export interface Calendar {
  readonly timeZone: string;
  /** The period of this kind that `instant` falls in. */
  bounds(period: CalendarPeriod, instant: number): PeriodBounds;
}

/** Whether the Intl API knows this time zone name (IANA names such as "Europe/Berlin", and "UTC"). */
export function isTimeZone(name: string): boolean {
  if (name.trim() === '' || name.length > 64) return false;
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: name });
    return true;
  } catch {
    return false;
  }
}

interface CivilDate {
  readonly year: number;
  readonly month: number;
  readonly day: number;
}

const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;

/** The civil date `days` after `date` (the proleptic Gregorian calendar; Date.UTC normalises overflow). */
function addDays(date: CivilDate, days: number): CivilDate {
  const shifted = new Date(Date.UTC(date.year, date.month - 1, date.day) + days * DAY_MS);
  return { year: shifted.getUTCFullYear(), month: shifted.getUTCMonth() + 1, day: shifted.getUTCDate() };
}

const compare = (a: CivilDate, b: CivilDate) => a.year - b.year || a.month - b.month || a.day - b.day;

/** A calendar for one zone; its formatter is built once (building one costs far more than using it). */
export function createCalendar(timeZone: string): Calendar {
  const formatter = new Intl.DateTimeFormat('en-US', {
    timeZone,
    hourCycle: 'h23',
    year: 'numeric',
    month: 'numeric',
    day: 'numeric',
    hour: 'numeric',
    minute: 'numeric',
    second: 'numeric',
  });

  /** The wall clock in the zone at `instant`, read as if it were UTC (ms, whole seconds). */
  function wallClock(instant: number): number {
    const parts: Record<string, number> = {};
    for (const part of formatter.formatToParts(new Date(instant))) {
      if (part.type !== 'literal') parts[part.type] = Number(part.value);
    }
    return Date.UTC(parts.year ?? 1970, (parts.month ?? 1) - 1, parts.day ?? 1, (parts.hour ?? 0) % 24, parts.minute ?? 0, parts.second ?? 0);
  }

  function dateAt(instant: number): CivilDate {
    const wall = new Date(wallClock(instant));
    return { year: wall.getUTCFullYear(), month: wall.getUTCMonth() + 1, day: wall.getUTCDate() };
  }

  const offsetAt = (instant: number) => wallClock(instant) - Math.floor(instant / 1000) * 1000;
  const startsOn = (instant: number, date: CivilDate) => compare(dateAt(instant), date) >= 0 && compare(dateAt(instant - 1), date) < 0;

  /** The first instant whose local date is `date` or later. */
  function startOf(date: CivilDate): number {
    const midnightAsUtc = Date.UTC(date.year, date.month - 1, date.day);
    // Usually exact in two steps: the offset at a first guess, then at the instant it gives.
    const guess = midnightAsUtc - offsetAt(midnightAsUtc);
    const instant = midnightAsUtc - offsetAt(guess);
    if (startsOn(instant, date)) return instant;
    // Where the zone skips or repeats midnight: search. UTC offsets lie within −12 h … +14 h.
    let low = midnightAsUtc - 15 * HOUR_MS;
    let high = midnightAsUtc + 13 * HOUR_MS;
    while (high - low > 1) {
      const middle = Math.floor((low + high) / 2);
      if (compare(dateAt(middle), date) >= 0) high = middle;
      else low = middle;
    }
    return high;
  }

  function firstDate(period: CalendarPeriod, date: CivilDate): { first: CivilDate; next: CivilDate } {
    if (period === 'day') return { first: date, next: addDays(date, 1) };
    if (period === 'week') {
      const sinceMonday = (new Date(Date.UTC(date.year, date.month - 1, date.day)).getUTCDay() + 6) % 7;
      const monday = addDays(date, -sinceMonday);
      return { first: monday, next: addDays(monday, 7) };
    }
    const first = { year: date.year, month: date.month, day: 1 };
    const next = date.month === 12 ? { year: date.year + 1, month: 1, day: 1 } : { year: date.year, month: date.month + 1, day: 1 };
    return { first, next };
  }

  return {
    timeZone,
    bounds(period, instant) {
      const { first, next } = firstDate(period, dateAt(instant));
      return { start: startOf(first), end: startOf(next) };
    },
  };
}
