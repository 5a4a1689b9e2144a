import { describe, expect, it } from 'vitest';
import { DEFAULT_POLLING, pollDelayMs, RETRY_AFTER_CAP_MS } from '../../src/executor/domain/provider-polling.js';
import { retryAfterMs } from '../../src/executor/provider/fal-queue-client.js';

describe('provider polling follows the job', () => {
  it('polls soon after the submission, then waits a quarter of the time the job has had, within the bounds', () => {
    expect(pollDelayMs({ sinceSubmitMs: 0 })).toBe(DEFAULT_POLLING.initialMs);
    expect(pollDelayMs({ sinceSubmitMs: 300 })).toBe(100);
    expect(pollDelayMs({ sinceSubmitMs: 2_000 })).toBe(500);
    expect(pollDelayMs({ sinceSubmitMs: 8_000 })).toBe(2_000);
    expect(pollDelayMs({ sinceSubmitMs: 600_000 })).toBe(DEFAULT_POLLING.maxMs);
    expect(pollDelayMs({ sinceSubmitMs: 1_000 }, { initialMs: 400, maxMs: 800 })).toBe(400);
    expect(pollDelayMs({ sinceSubmitMs: 60_000 }, { initialMs: 400, maxMs: 800 })).toBe(800);
  });

  it('a job waiting in the queue is asked about less often: one initial interval per job ahead, within the maximum', () => {
    expect(pollDelayMs({ sinceSubmitMs: 0, queuePosition: 0 })).toBe(100);
    expect(pollDelayMs({ sinceSubmitMs: 0, queuePosition: 9 })).toBe(1_000);
    expect(pollDelayMs({ sinceSubmitMs: 0, queuePosition: 10_000 })).toBe(DEFAULT_POLLING.maxMs);
  });

  it('a Retry-After is honoured beyond the maximum, up to a minute', () => {
    expect(pollDelayMs({ sinceSubmitMs: 0, retryAfterMs: 8_000 })).toBe(8_000);
    expect(pollDelayMs({ sinceSubmitMs: 0, retryAfterMs: 3_600_000 })).toBe(RETRY_AFTER_CAP_MS);
  });

  it('reads Retry-After as delta-seconds or an HTTP date, and nothing else', () => {
    const now = Date.parse('2026-11-25T07:00:00Z');
    expect(retryAfterMs('3', now)).toBe(3_000);
    expect(retryAfterMs('Wed, 25 Nov 2026 07:00:05 GMT', now)).toBe(5_000);
    expect(retryAfterMs('Wed, 25 Nov 2026 06:59:00 GMT', now)).toBe(0);
    expect(retryAfterMs('-1', now)).toBeNull();
    expect(retryAfterMs('soon', now)).toBeNull();
    expect(retryAfterMs('12345678', now)).toBeNull();
    expect(retryAfterMs(undefined, now)).toBeNull();
  });
});
