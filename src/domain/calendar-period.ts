/*
 * Calendar periods in an IANA time zone (docs/ledger.md "Budgets" and "Spend reports"): a day, an
 * ISO week (Monday first) or a month begins at local midnight of its first date and ends where
 * the next begins. So a day is 23 or 25 hours long across a daylight-saving change (24.5 at Lord
 * Howe), and a period always starts at the first instant whose local date is its first date
 * (where a zone skips midnight, that is the instant the clock jumps: 01:00 in Santiago on its
 * spring-forward day). Budgets read a period's bounds, spend reports its name and the start of a
 * date. Pure: the zone rules are the Intl API's (the ICU time zone database Node carries), no
 * clock and no I/O — the caller passes the instant.
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
  /**
   * The name of the period of this kind that `instant` falls in, text that sorts in time order:
   * `2026-11-27` (day), `2026-11-23` (week: the date of its Monday), `2026-11` (month).
   */
  periodName(period: CalendarPeriod, instant: number): string;
  /** The first instant of a date written `YYYY-MM-DD` (one `isCivilDate` accepts; anything else is a RangeError). */
  startOfDate(text: string): number;
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

/** A civil date's midnight read as if it were UTC (ms); overflowing months and days roll over. setUTCFullYear: Date.UTC would read years 0–99 as 1900–1999. */
function utcMidnight(date: CivilDate): number {
  return new Date(0).setUTCFullYear(date.year, date.month - 1, date.day);
}

function civilDateAt(utcMs: number): CivilDate {
  const at = new Date(utcMs);
  return { year: at.getUTCFullYear(), month: at.getUTCMonth() + 1, day: at.getUTCDate() };
}

/** The civil date `days` after `date` (the proleptic Gregorian calendar). */
const addDays = (date: CivilDate, days: number) => civilDateAt(utcMidnight(date) + days * DAY_MS);
const compare = (a: CivilDate, b: CivilDate) => a.year - b.year || a.month - b.month || a.day - b.day;
const pad = (value: number, width = 2) => String(value).padStart(width, '0');
const dateText = (date: CivilDate) => `${pad(date.year, 4)}-${pad(date.month)}-${pad(date.day)}`;

/** `YYYY-MM-DD` read as a civil date, or null where it is not one (2026-02-30, 2026-2-3). */
function parseCivilDate(text: string): CivilDate | null {
  const match = /^(\d{4})-(\d{2})-(\d{2})$/.exec(text);
  if (match === null) return null;
  const date = { year: Number(match[1]), month: Number(match[2]), day: Number(match[3]) };
  return compare(civilDateAt(utcMidnight(date)), date) === 0 ? date : null;
}

/** Whether `YYYY-MM-DD` names a date that exists (2026-02-28 does, 2026-02-30 and 2026-2-3 do not). */
export const isCivilDate = (text: string): boolean => parseCivilDate(text) !== null;

/** The first date of the period of this kind holding `date`, and the first date of the next one. */
function periodDates(period: CalendarPeriod, date: CivilDate): { first: CivilDate; next: CivilDate } {
  if (period === 'day') return { first: date, next: addDays(date, 1) };
  if (period === 'week') {
    const sinceMonday = (new Date(utcMidnight(date)).getUTCDay() + 6) % 7;
    const monday = addDays(date, -sinceMonday);
    return { first: monday, next: addDays(monday, 7) };
  }
  const first = { year: date.year, month: date.month, day: 1 };
  const next = date.month === 12 ? { year: date.year + 1, month: 1, day: 1 } : { year: date.year, month: date.month + 1, day: 1 };
  return { first, next };
}

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
    const wall = new Date(0);
    wall.setUTCFullYear(parts.year ?? 1970, (parts.month ?? 1) - 1, parts.day ?? 1);
    return wall.setUTCHours((parts.hour ?? 0) % 24, parts.minute ?? 0, parts.second ?? 0);
  }

  const dateAt = (instant: number) => civilDateAt(wallClock(instant));
  const offsetAt = (instant: number) => wallClock(instant) - Math.floor(instant / 1000) * 1000;
  const startsOn = (instant: number, date: CivilDate) => compare(dateAt(instant), date) >= 0 && compare(dateAt(instant - 1), date) < 0;

  /** The first instant whose local date is `date` or later. */
  function startOf(date: CivilDate): number {
    const midnightAsUtc = utcMidnight(date);
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

  return {
    timeZone,
    bounds(period, instant) {
      const { first, next } = periodDates(period, dateAt(instant));
      return { start: startOf(first), end: startOf(next) };
    },
    periodName(period, instant) {
      const { first } = periodDates(period, dateAt(instant));
      return period === 'month' ? dateText(first).slice(0, 7) : dateText(first);
    },
    startOfDate(text) {
      const date = parseCivilDate(text);
      if (date === null) throw new RangeError(`not a date (YYYY-MM-DD): ${text}`);
      return startOf(date);
    },
  };
}
