import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { CALENDAR_PERIODS, createCalendar, isCivilDate, isTimeZone, type CalendarPeriod } from '../../src/domain/calendar-period.js';

/*
 * Calendar periods (docs/ledger.md "Budgets", "Spend reports"): a day, an ISO week and a month
 * begin at local midnight in the installation's zone, so across a daylight-saving change a day is
 * 23, 24.5 or 25 hours; budgets read a period's bounds, spend reports its name and the start of a
 * date. Instants are fixed (a fake clock): each case names the instant and the bounds, name or
 * start the zone's rules give.
 */

const at = (iso: string) => Date.parse(iso);
const iso = (ms: number) => new Date(ms).toISOString();
const bounds = (zone: string, period: CalendarPeriod, instant: string) => {
  const found = createCalendar(zone).bounds(period, at(instant));
  return [iso(found.start), iso(found.end)];
};
const hours = ([start, end]: string[]) => (at(end ?? '') - at(start ?? '')) / 3_600_000;
const nameOf = (zone: string, period: CalendarPeriod, instant: string | number) => createCalendar(zone).periodName(period, typeof instant === 'number' ? instant : at(instant));
const startOfDate = (zone: string, date: string) => createCalendar(zone).startOfDate(date);

describe('calendar periods in UTC', () => {
  it('cuts days, ISO weeks and months at UTC midnight, across a year boundary', () => {
    expect(bounds('UTC', 'day', '2026-12-31T23:59:59.999Z')).toEqual(['2026-12-31T00:00:00.000Z', '2027-01-01T00:00:00.000Z']);
    expect(bounds('UTC', 'day', '2027-01-01T00:00:00.000Z')).toEqual(['2027-01-01T00:00:00.000Z', '2027-01-02T00:00:00.000Z']);
    expect(bounds('UTC', 'month', '2026-12-31T23:59:59.999Z')).toEqual(['2026-12-01T00:00:00.000Z', '2027-01-01T00:00:00.000Z']);
    expect(bounds('UTC', 'month', '2028-02-29T12:00:00Z')).toEqual(['2028-02-01T00:00:00.000Z', '2028-03-01T00:00:00.000Z']);
    // 2026-12-31 is a Thursday: its ISO week runs Monday 28 December to Monday 4 January.
    expect(bounds('UTC', 'week', '2026-12-31T10:00:00Z')).toEqual(['2026-12-28T00:00:00.000Z', '2027-01-04T00:00:00.000Z']);
    expect(bounds('UTC', 'week', '2027-01-03T23:59:59Z')).toEqual(['2026-12-28T00:00:00.000Z', '2027-01-04T00:00:00.000Z']);
    expect(bounds('UTC', 'week', '2027-01-04T00:00:00Z')).toEqual(['2027-01-04T00:00:00.000Z', '2027-01-11T00:00:00.000Z']);
  });
});

describe('calendar periods in America/New_York', () => {
  const zone = 'America/New_York';
  it('has a 23-hour day when the clocks go forward (8 March 2026) and a 25-hour day when they go back (1 November 2026)', () => {
    const spring = bounds(zone, 'day', '2026-03-08T12:00:00Z');
    expect(spring).toEqual(['2026-03-08T05:00:00.000Z', '2026-03-09T04:00:00.000Z']);
    expect(hours(spring)).toBe(23);
    const autumn = bounds(zone, 'day', '2026-11-01T05:30:00Z');
    expect(autumn).toEqual(['2026-11-01T04:00:00.000Z', '2026-11-02T05:00:00.000Z']);
    expect(hours(autumn)).toBe(25);
  });

  it('starts the month at local midnight: 23:30 local on 31 March is still March, 00:30 local on 1 April is April', () => {
    expect(bounds(zone, 'month', '2026-04-01T03:30:00Z')).toEqual(['2026-03-01T05:00:00.000Z', '2026-04-01T04:00:00.000Z']);
    expect(bounds(zone, 'month', '2026-04-01T04:30:00Z')).toEqual(['2026-04-01T04:00:00.000Z', '2026-05-01T04:00:00.000Z']);
    // The week holding the spring change is an hour short.
    expect(hours(bounds(zone, 'week', '2026-03-08T12:00:00Z'))).toBe(167);
  });
});

describe('calendar periods in Europe/Berlin', () => {
  const zone = 'Europe/Berlin';
  it('has a 23-hour day on 29 March 2026 and a 25-hour day on 25 October 2026', () => {
    expect(bounds(zone, 'day', '2026-03-29T10:00:00Z')).toEqual(['2026-03-28T23:00:00.000Z', '2026-03-29T22:00:00.000Z']);
    expect(bounds(zone, 'day', '2026-10-25T10:00:00Z')).toEqual(['2026-10-24T22:00:00.000Z', '2026-10-25T23:00:00.000Z']);
  });

  it('ends March (begun in winter time) at midnight summer time, and the ISO week holding the change is 167 hours', () => {
    expect(bounds(zone, 'month', '2026-03-31T21:59:59Z')).toEqual(['2026-02-28T23:00:00.000Z', '2026-03-31T22:00:00.000Z']);
    expect(bounds(zone, 'month', '2026-03-31T22:00:00Z')).toEqual(['2026-03-31T22:00:00.000Z', '2026-04-30T22:00:00.000Z']);
    const week = bounds(zone, 'week', '2026-03-29T10:00:00Z');
    expect(week).toEqual(['2026-03-22T23:00:00.000Z', '2026-03-29T22:00:00.000Z']);
    expect(hours(week)).toBe(167);
  });
});

describe('calendar periods in Australia/Lord_Howe (a half-hour change)', () => {
  it('has a 24.5-hour day when daylight time ends on 5 April 2026', () => {
    const day = bounds('Australia/Lord_Howe', 'day', '2026-04-05T06:00:00Z');
    expect(day).toEqual(['2026-04-04T13:00:00.000Z', '2026-04-05T13:30:00.000Z']);
    expect(hours(day)).toBe(24.5);
  });

  it('has a 23.5-hour day when daylight time begins on 4 October 2026', () => {
    const day = bounds('Australia/Lord_Howe', 'day', '2026-10-04T06:00:00Z');
    expect(day).toEqual(['2026-10-03T13:30:00.000Z', '2026-10-04T13:00:00.000Z']);
    expect(hours(day)).toBe(23.5);
  });
});

describe('days whose midnight a daylight-saving change skips or repeats', () => {
  it('starts the day at 01:00 where the clocks jump from 00:00 (America/Santiago, 6 September 2026): 23 hours', () => {
    const day = bounds('America/Santiago', 'day', '2026-09-06T12:00:00Z');
    expect(day).toEqual(['2026-09-06T04:00:00.000Z', '2026-09-07T03:00:00.000Z']);
    expect(hours(day)).toBe(23);
    const start = startOfDate('America/Santiago', '2026-09-06');
    expect(iso(start)).toBe('2026-09-06T04:00:00.000Z');
    expect(nameOf('America/Santiago', 'day', start)).toBe('2026-09-06');
    expect(nameOf('America/Santiago', 'day', start - 1)).toBe('2026-09-05');
  });

  it('starts the day at the first of two midnights where the clocks go back from 01:00 to 00:00 (Asia/Gaza, 27 October 2018): 25 hours', () => {
    const day = bounds('Asia/Gaza', 'day', '2018-10-26T22:30:00Z'); // 00:30, the second time
    expect(day).toEqual(['2018-10-26T21:00:00.000Z', '2018-10-27T22:00:00.000Z']);
    expect(hours(day)).toBe(25);
    expect(iso(startOfDate('Asia/Gaza', '2018-10-27'))).toBe('2018-10-26T21:00:00.000Z');
  });
});

describe('period names (spend reports\' groups)', () => {
  it('names the day, the week by its Monday and the month of the zone, not of UTC', () => {
    // 03:30 UTC on 1 December is still 30 November, 22:30, in New York (UTC-5).
    const instant = '2026-12-01T03:30:00Z';
    expect(nameOf('America/New_York', 'day', instant)).toBe('2026-11-30');
    expect(nameOf('America/New_York', 'month', instant)).toBe('2026-11');
    expect(nameOf('America/New_York', 'week', instant)).toBe('2026-11-30'); // a Monday
    expect(nameOf('UTC', 'day', instant)).toBe('2026-12-01');
    expect(nameOf('UTC', 'month', instant)).toBe('2026-12');
    // Tokyo is ahead: 16:00 UTC on Sunday 29 November is Monday 30 November, 01:00.
    expect(nameOf('Asia/Tokyo', 'week', '2026-11-29T16:00:00Z')).toBe('2026-11-30');
    expect(nameOf('UTC', 'week', '2026-11-29T16:00:00Z')).toBe('2026-11-23');
  });

  it('starts weeks on Monday across a year end (ISO 8601)', () => {
    expect(nameOf('UTC', 'week', '2027-01-03T12:00:00Z')).toBe('2026-12-28'); // Sunday → the Monday before
    expect(nameOf('UTC', 'week', '2027-01-04T00:00:00Z')).toBe('2027-01-04'); // Monday → itself
  });

  it('keeps a 23-hour and a 25-hour day whole across daylight-saving changes', () => {
    const ny = 'America/New_York';
    // 2026-03-08: clocks go 02:00 → 03:00 (23 hours). 2026-11-01: 02:00 → 01:00 (25 hours).
    const march8 = startOfDate(ny, '2026-03-08');
    const march9 = startOfDate(ny, '2026-03-09');
    expect(iso(march8)).toBe('2026-03-08T05:00:00.000Z');
    expect(march9 - march8).toBe(23 * 3_600_000);
    expect(nameOf(ny, 'day', march9 - 1)).toBe('2026-03-08');
    expect(nameOf(ny, 'day', march9)).toBe('2026-03-09');
    const november1 = startOfDate(ny, '2026-11-01');
    const november2 = startOfDate(ny, '2026-11-02');
    expect(iso(november1)).toBe('2026-11-01T04:00:00.000Z');
    expect(november2 - november1).toBe(25 * 3_600_000);
    expect(nameOf(ny, 'day', november2 - 1)).toBe('2026-11-01');
    expect(startOfDate('Europe/Berlin', '2026-10-26') - startOfDate('Europe/Berlin', '2026-10-25')).toBe(25 * 3_600_000);
    expect(nameOf('Europe/Berlin', 'month', '2026-10-31T23:30:00Z')).toBe('2026-11');
  });

  it('refuses to start a date that does not exist', () => {
    expect(() => startOfDate('UTC', '2026-02-30')).toThrow(RangeError);
  });
});

describe('every instant lies in exactly one period of each kind', () => {
  const zones = ['UTC', 'America/New_York', 'Europe/Berlin', 'Australia/Lord_Howe', 'America/Santiago', 'Asia/Gaza', 'Asia/Kolkata'];
  it('holds for random instants in 2020-2035: start ≤ instant < end, the end starts the next period, a start is its own period and has its name', () => {
    const calendars = zones.map((zone) => createCalendar(zone));
    fc.assert(
      fc.property(fc.integer({ min: at('2020-01-01T00:00:00Z'), max: at('2035-12-31T00:00:00Z') }), fc.constantFrom(...calendars), fc.constantFrom(...CALENDAR_PERIODS), (instant, calendar, period) => {
        const found = calendar.bounds(period, instant);
        expect(found.start).toBeLessThanOrEqual(instant);
        expect(found.end).toBeGreaterThan(instant);
        expect(calendar.bounds(period, found.start)).toEqual(found);
        expect(calendar.bounds(period, found.end).start).toBe(found.end);
        expect(calendar.bounds(period, found.start - 1).end).toBe(found.start);
        // Its name is the instant's and its start's, not the instant before; the date it names starts it.
        const name = calendar.periodName(period, instant);
        expect(calendar.periodName(period, found.start)).toBe(name);
        expect(calendar.periodName(period, found.start - 1) < name).toBe(true);
        expect(calendar.startOfDate(period === 'month' ? `${name}-01` : name)).toBe(found.start);
      }),
      { numRuns: 300 },
    );
  });
});

describe('time zone names and dates', () => {
  it('knows IANA names and UTC, and refuses unknown ones', () => {
    expect(isTimeZone('UTC')).toBe(true);
    expect(isTimeZone('Europe/Berlin')).toBe(true);
    expect(isTimeZone('America/New_York')).toBe(true);
    expect(isTimeZone('Mars/Olympus_Mons')).toBe(false);
    expect(isTimeZone('')).toBe(false);
  });

  it('knows real dates from others', () => {
    expect(isCivilDate('2026-02-28')).toBe(true);
    expect(isCivilDate('2028-02-29')).toBe(true);
    expect(isCivilDate('2026-02-30')).toBe(false);
    expect(isCivilDate('2026-2-3')).toBe(false);
    expect(isCivilDate('0050-01-01')).toBe(true); // not read as 1950
  });
});
