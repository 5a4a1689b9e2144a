/*
 * Calendar periods in an IANA time zone, for spend reports (docs/ledger.md "Spend reports").
 * Pure: no clock, no I/O. An instant becomes a civil date in the zone once, through
 * Intl.DateTimeFormat (which knows the zone's offsets and their daylight-saving changes); all
 * arithmetic after that is on civil dates (Date.UTC as a proleptic calendar), so a 23- or 25-hour
 * day still is one day and a week is seven of them.
 */

export const CALENDAR_PERIODS = ['day', 'week', 'month'] as const;
export type CalendarPeriod = (typeof CALENDAR_PERIODS)[number];

/** Whether the runtime knows `zone` as an IANA time zone name (`UTC`, `Europe/Paris`, …). */
export function isTimeZone(zone: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: zone });
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

const pad = (value: number, width = 2) => String(value).padStart(width, '0');
const civilText = (date: CivilDate) => `${pad(date.year, 4)}-${pad(date.month)}-${pad(date.day)}`;

/**
 * A reader of instants in one zone: the civil date and wall-clock time of an instant there.
 * Built once per report (a formatter is costly to make, cheap to use).
 */
export function zoneReader(timeZone: string) {
  const format = new Intl.DateTimeFormat('en-US', {
    timeZone,
    hourCycle: 'h23',
    year: 'numeric',
    month: 'numeric',
    day: 'numeric',
    hour: 'numeric',
    minute: 'numeric',
    second: 'numeric',
  });
  const wall = (at: number) => {
    const parts: Record<string, number> = {};
    for (const part of format.formatToParts(new Date(at))) if (part.type !== 'literal') parts[part.type] = Number(part.value);
    return { year: parts.year ?? 0, month: parts.month ?? 0, day: parts.day ?? 0, hour: parts.hour ?? 0, minute: parts.minute ?? 0, second: parts.second ?? 0 };
  };
  /** How far the zone's wall clock is ahead of UTC at `at`, in ms (whole seconds). */
  const offset = (at: number) => {
    const w = wall(at);
    return Date.UTC(w.year, w.month - 1, w.day, w.hour, w.minute, w.second) - (at - (((at % 1000) + 1000) % 1000));
  };
  return {
    date: (at: number): CivilDate => wall(at),
    /**
     * The first instant of a civil date in the zone: its midnight, or where a daylight-saving
     * change skips midnight, the first wall-clock time that exists on that date.
     */
    startOf(date: CivilDate): number {
      const local = Date.UTC(date.year, date.month - 1, date.day);
      // Two passes settle the offset; if midnight does not exist the second lands after the gap.
      let at = local - offset(local);
      at = local - offset(at);
      const landed = wall(at);
      if (civilText(landed) !== civilText(date)) {
        // Midnight fell in a gap: step forward minute by minute (a gap is at most a few hours) to the date's first instant.
        let probe = at;
        while (civilText(wall(probe)) < civilText(date)) probe += 60_000;
        return probe;
      }
      return at;
    },
  };
}

export type ZoneReader = ReturnType<typeof zoneReader>;

/** Days since 1970-01-01 of a civil date (proleptic Gregorian), and back. */
const dayNumber = (date: CivilDate) => Date.UTC(date.year, date.month - 1, date.day) / 86_400_000;
function fromDayNumber(days: number): CivilDate {
  const d = new Date(days * 86_400_000);
  return { year: d.getUTCFullYear(), month: d.getUTCMonth() + 1, day: d.getUTCDate() };
}

/**
 * The calendar period an instant falls in, in the zone the reader was built for, as text that
 * sorts in time order: `2026-11-27` (day), `2026-11-23` (week: the date of its Monday, ISO 8601
 * weeks), `2026-11` (month).
 */
export function periodOf(reader: ZoneReader, at: number, period: CalendarPeriod): string {
  const date = reader.date(at);
  if (period === 'day') return civilText(date);
  if (period === 'month') return `${pad(date.year, 4)}-${pad(date.month)}`;
  const days = dayNumber(date);
  // 1970-01-01 was a Thursday: (days + 3) mod 7 is 0 on Mondays.
  return civilText(fromDayNumber(days - (((days + 3) % 7) + 7) % 7));
}

/** The first instant of a civil date written `YYYY-MM-DD`, in the reader's zone. */
export function startOfDate(reader: ZoneReader, text: string): number {
  const [year, month, day] = text.split('-').map(Number) as [number, number, number];
  return reader.startOf({ year, month, day });
}

/** Whether `YYYY-MM-DD` names a date that exists (2026-02-30 does not). */
export function isCivilDate(text: string): boolean {
  const match = /^(\d{4})-(\d{2})-(\d{2})$/.exec(text);
  if (match === null) return false;
  const [year, month, day] = [Number(match[1]), Number(match[2]), Number(match[3])];
  const date = fromDayNumber(dayNumber({ year, month, day }));
  return date.year === year && date.month === month && date.day === day;
}
