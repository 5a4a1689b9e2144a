import { describe, expect, it } from 'vitest';
import { createCalendar } from '../../src/domain/calendar-period.js';
import { summariseSpend } from '../../src/ledger/summarise-spend.js';

/* A spend report's arithmetic (docs/ledger.md "Spend reports"): exact sums per group, periods read in the installation's zone. */

describe('summariseSpend', () => {
  it('sums settled and held amounts apart per group, exactly, beyond 2^53 micro-units', () => {
    const big = 2n ** 60n + 1n;
    const summary = summariseSpend({
      by: 'target',
      calendar: createCalendar('UTC'),
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

  it('groups by the calendar day of the zone: 03:30 UTC on 1 December is 30 November in New York', () => {
    const row = (iso: string, amountUnits: bigint) => ({ agentId: 'a', targetId: null, at: Date.parse(iso), amountUnits });
    const input = { by: 'day' as const, settlements: [row('2026-12-01T03:30:00Z', 2n), row('2026-12-01T12:00:00Z', 3n)], holds: [] };
    expect(summariseSpend({ ...input, calendar: createCalendar('America/New_York') }).groups.map((group) => [group.group, group.settledUnits])).toEqual([
      ['2026-11-30', 2n],
      ['2026-12-01', 3n],
    ]);
    expect(summariseSpend({ ...input, calendar: createCalendar('UTC') }).groups.map((group) => [group.group, group.settledUnits])).toEqual([['2026-12-01', 5n]]);
  });
});
