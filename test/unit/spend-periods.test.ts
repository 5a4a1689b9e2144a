import { describe, expect, it } from 'vitest';
import { isCivilDate, isTimeZone, periodOf, startOfDate, zoneReader } from '../../src/ledger/spend-periods.js';
import { summariseSpend } from '../../src/ledger/summarise-spend.js';

/*
 * Calendar periods of spend reports in a time zone: days, ISO weeks (Monday first) and months,
 * across month ends and daylight-saving changes, in zones on both sides of UTC.
 */

const at = (iso: string) => Date.parse(iso);

describe('calendar periods in a time zone', () => {
  it('puts an instant in the day, the week of its Monday and the month of the zone, not of UTC', () => {
    const ny = zoneReader('America/New_York');
    // 03:30 UTC on 1 December is still 30 November, 22:30, in New York (UTC-5).
    const instant = at('2026-12-01T03:30:00Z');
    expect(periodOf(ny, instant, 'day')).toBe('2026-11-30');
    expect(periodOf(ny, instant, 'month')).toBe('2026-11');
    expect(periodOf(ny, instant, 'week')).toBe('2026-11-30'); // a Monday
    const utc = zoneReader('UTC');
    expect(periodOf(utc, instant, 'day')).toBe('2026-12-01');
    expect(periodOf(utc, instant, 'month')).toBe('2026-12');
    // Tokyo is ahead: 16:00 UTC on Sunday 29 November is Monday 30 November, 01:00.
    const tokyo = zoneReader('Asia/Tokyo');
    expect(periodOf(tokyo, at('2026-11-29T16:00:00Z'), 'week')).toBe('2026-11-30');
    expect(periodOf(utc, at('2026-11-29T16:00:00Z'), 'week')).toBe('2026-11-23');
  });

  it('starts weeks on Monday across a year end (ISO 8601)', () => {
    const utc = zoneReader('UTC');
    expect(periodOf(utc, at('2027-01-03T12:00:00Z'), 'week')).toBe('2026-12-28'); // Sunday → the Monday before
    expect(periodOf(utc, at('2027-01-04T00:00:00Z'), 'week')).toBe('2027-01-04'); // Monday → itself
  });

  it('keeps a 23-hour and a 25-hour day whole across daylight-saving changes', () => {
    const ny = zoneReader('America/New_York');
    // 2026-03-08: clocks go 02:00 → 03:00 (23 hours). 2026-11-01: 02:00 → 01:00 (25 hours).
    const march8 = startOfDate(ny, '2026-03-08');
    const march9 = startOfDate(ny, '2026-03-09');
    expect(new Date(march8).toISOString()).toBe('2026-03-08T05:00:00.000Z');
    expect(march9 - march8).toBe(23 * 3_600_000);
    expect(periodOf(ny, march9 - 1, 'day')).toBe('2026-03-08');
    expect(periodOf(ny, march9, 'day')).toBe('2026-03-09');
    const november1 = startOfDate(ny, '2026-11-01');
    const november2 = startOfDate(ny, '2026-11-02');
    expect(new Date(november1).toISOString()).toBe('2026-11-01T04:00:00.000Z');
    expect(november2 - november1).toBe(25 * 3_600_000);
    expect(periodOf(ny, november2 - 1, 'day')).toBe('2026-11-01');
    const berlin = zoneReader('Europe/Berlin');
    expect(startOfDate(berlin, '2026-10-26') - startOfDate(berlin, '2026-10-25')).toBe(25 * 3_600_000);
    expect(periodOf(berlin, at('2026-10-31T23:30:00Z'), 'month')).toBe('2026-11');
  });

  it('starts a day whose midnight a daylight-saving change skips at its first existing instant', () => {
    // Santiago (Chile) moves its clocks at midnight: on 2026-09-06, 00:00 → 01:00.
    const santiago = zoneReader('America/Santiago');
    const start = startOfDate(santiago, '2026-09-06');
    expect(periodOf(santiago, start, 'day')).toBe('2026-09-06');
    expect(periodOf(santiago, start - 1, 'day')).toBe('2026-09-05');
  });

  it('knows real dates and time zones from others', () => {
    expect(isCivilDate('2026-02-28')).toBe(true);
    expect(isCivilDate('2026-02-30')).toBe(false);
    expect(isCivilDate('2026-2-3')).toBe(false);
    expect(isTimeZone('America/New_York')).toBe(true);
    expect(isTimeZone('Mars/Olympus')).toBe(false);
  });
});

describe('summariseSpend', () => {
  it('sums settled and held amounts apart per group, exactly, beyond 2^53 micro-units', () => {
    const big = 2n ** 60n + 1n;
    const summary = summariseSpend({
      by: 'target',
      timeZone: 'UTC',
      settlements: [
        { agentId: 'a', targetId: 't1', at: 0, amountUnits: big },
        { agentId: 'b', targetId: 't1', at: 1, amountUnits: 1n },
        { agentId: 'a', targetId: null, at: 2, amountUnits: 7n },
      ],
      holds: [{ agentId: 'a', targetId: 't2', at: 3, amountUnits: 5n }],
    });
    expect(summary.groups).toEqual([
      { group: '(none)', settledUnits: 7n, settledCount: 1, heldUnits: 0n, heldCount: 0 },
      { group: 't1', settledUnits: big + 1n, settledCount: 2, heldUnits: 0n, heldCount: 0 },
      { group: 't2', settledUnits: 0n, settledCount: 0, heldUnits: 5n, heldCount: 1 },
    ]);
    expect(summary.total).toEqual({ settledUnits: big + 8n, settledCount: 3, heldUnits: 5n, heldCount: 1 });
  });
});
