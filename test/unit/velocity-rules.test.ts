import { describe, expect, it } from 'vitest';
import { breakerReason, decideVelocity, HOUR_MS, MINUTE_MS, tripsBreaker, velocityLimits, type VelocityReading } from '../../src/ledger/authorization-rules.js';

/*
 * The runaway-loop breaker's pure rules (issue 27 item 3; docs/ledger.md "Velocity limits"): a
 * request is over a limit when `limit` earlier requests fall inside its window; Retry-After is how
 * long the agent must send nothing for the next request to be within every limit, the refused
 * request counted; the Nth refusal in the hour trips the breaker. Times are fixed numbers.
 */

const NOW = 10 * HOUR_MS;
const perMinute = (limit: bigint, rankLimit: number | null, rankBeforeLimit: number | null): VelocityReading => ({
  field: 'max_requests_per_minute',
  limit,
  windowMs: MINUTE_MS,
  rankLimit,
  rankBeforeLimit,
});
const perHour = (limit: bigint, rankLimit: number | null, rankBeforeLimit: number | null): VelocityReading => ({
  field: 'max_requests_per_hour',
  limit,
  windowMs: HOUR_MS,
  rankLimit,
  rankBeforeLimit,
});

describe('velocity limits', () => {
  it('a policy without velocity fields has no limits (nothing is counted)', () => {
    expect(velocityLimits({})).toEqual([]);
    expect(velocityLimits({ max_requests_per_minute: null, max_requests_per_hour: null })).toEqual([]);
    expect(velocityLimits({ max_requests_per_minute: 3n, max_requests_per_hour: 100n }).map((limit) => [limit.field, limit.limit, limit.windowMs])).toEqual([
      ['max_requests_per_minute', 3n, MINUTE_MS],
      ['max_requests_per_hour', 100n, HOUR_MS],
    ]);
  });

  it('within while fewer than `limit` earlier requests fall inside the window; its left edge is open', () => {
    expect(decideVelocity([perMinute(3n, null, null)], NOW)).toEqual({ outcome: 'within' });
    // The request ranked 3 was exactly one minute ago: outside (now − 60 s, now].
    expect(decideVelocity([perMinute(3n, NOW - MINUTE_MS, NOW - 10_000)], NOW)).toEqual({ outcome: 'within' });
    expect(decideVelocity([perMinute(3n, NOW - MINUTE_MS + 1, NOW - 10_000)], NOW)).toMatchObject({ outcome: 'refused' });
  });

  it('Retry-After: until the request ranked `limit` with this refused one counted leaves its window', () => {
    // Earlier requests at −50 s (rank 3), −20 s (rank 2): counting this one, rank 3 is the one at −20 s → 40 s.
    expect(decideVelocity([perMinute(3n, NOW - 50_000, NOW - 20_000)], NOW)).toEqual({ outcome: 'refused', field: 'max_requests_per_minute', retryAfterSeconds: 40 });
    // Rounded up to whole seconds, never 0.
    expect(decideVelocity([perMinute(3n, NOW - 50_000, NOW - 59_500)], NOW)).toMatchObject({ retryAfterSeconds: 1 });
    expect(decideVelocity([perMinute(3n, NOW - 50_000, NOW - 20_001)], NOW)).toMatchObject({ retryAfterSeconds: 40 });
    expect(decideVelocity([perMinute(3n, NOW - 50_000, NOW - 19_999)], NOW)).toMatchObject({ retryAfterSeconds: 41 });
    // A limit of 1: the refused request itself must leave the window, a whole minute.
    expect(decideVelocity([perMinute(1n, NOW - 5_000, null)], NOW)).toEqual({ outcome: 'refused', field: 'max_requests_per_minute', retryAfterSeconds: 60 });
  });

  it('with both limits, the longest wait is named — also when the hour is not yet over its limit but would be after the minute', () => {
    const minuteOver = perMinute(2n, NOW - 30_000, NOW - 10_000);
    // The hour's rank-10 request is outside, but counting this one its rank 10 (rank 9 earlier) is 20 minutes old.
    const hourFull = perHour(10n, NOW - 2 * HOUR_MS, NOW - 20 * MINUTE_MS);
    expect(decideVelocity([minuteOver, hourFull], NOW)).toEqual({ outcome: 'refused', field: 'max_requests_per_hour', retryAfterSeconds: 40 * 60 });
    const hourRoomy = perHour(10n, null, null);
    expect(decideVelocity([minuteOver, hourRoomy], NOW)).toEqual({ outcome: 'refused', field: 'max_requests_per_minute', retryAfterSeconds: 50 });
  });

  it('the breaker trips at the Nth velocity refusal in the hour, only when set, and says why', () => {
    expect(tripsBreaker({ max_requests_per_minute: 5n }, 100)).toBe(false);
    expect(tripsBreaker({ max_requests_per_minute: 5n, suspend_after_velocity_refusals: 3n }, 2)).toBe(false);
    expect(tripsBreaker({ max_requests_per_minute: 5n, suspend_after_velocity_refusals: 3n }, 3)).toBe(true);
    expect(breakerReason({ max_requests_per_minute: 5n, max_requests_per_hour: 100n, suspend_after_velocity_refusals: 3n }, 3)).toBe(
      'velocity: 3 refusals in the last hour (limit 5 requests per minute, 100 requests per hour); suspended automatically by the runaway-loop breaker',
    );
  });
});
