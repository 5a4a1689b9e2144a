import { describe, expect, it } from 'vitest';
import { retryDelayMs } from '../../src/ledger/webhooks/webhook-delivery.js';
import { redactedWebhookUrl, isAcceptableWebhookUrl } from '../../src/ledger/webhooks/webhook-url.js';

/* Webhook delivery's pure parts: the retry delay (doubling, capped, half of it random) and the URL rule and its redaction. */

const settings = { firstRetryMs: 1_000, maxRetryMs: 3_600_000 };

describe('retryDelayMs', () => {
  it('doubles after each failed attempt, with the upper half random, and is capped', () => {
    expect([1, 2, 3, 4].map((attempts) => retryDelayMs(attempts, settings, () => 0))).toEqual([500, 1_000, 2_000, 4_000]);
    expect([1, 2, 3, 4].map((attempts) => retryDelayMs(attempts, settings, () => 0.999_999))).toEqual([1_000, 2_000, 4_000, 8_000]);
    expect(retryDelayMs(40, settings, () => 0.999_999)).toBeLessThanOrEqual(3_600_000);
    expect(retryDelayMs(40, settings, () => 0.999_999)).toBeGreaterThan(3_599_000);
    expect(retryDelayMs(40, settings, () => 0)).toBe(1_800_000);
  });
});

describe('webhook URLs', () => {
  it('takes https anywhere and http only to a loopback host, never with credentials or a fragment', () => {
    const taken = ['https://hooks.slack.com/services/T/B/X', 'http://127.0.0.1:9/x', 'http://127.9.9.9/x', 'http://[::1]:9/x', 'http://localhost/x'];
    const refused = ['http://hooks.example.com/x', 'http://10.0.0.1/x', 'https://u:p@hooks.example.com/x', 'https://hooks.example.com/x#f', 'ftp://127.0.0.1/x', 'not a url'];
    expect(taken.filter(isAcceptableWebhookUrl)).toEqual(taken);
    expect(refused.filter(isAcceptableWebhookUrl)).toEqual([]);
  });

  it('shows only the origin, and /… when there is a path or a query', () => {
    expect(redactedWebhookUrl('https://hooks.slack.com/services/T000/B000/XXXX')).toBe('https://hooks.slack.com/…');
    expect(redactedWebhookUrl('https://hooks.example.com/?token=abc')).toBe('https://hooks.example.com/…');
    expect(redactedWebhookUrl('https://hooks.example.com')).toBe('https://hooks.example.com/');
  });
});
