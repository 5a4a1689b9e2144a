import { createHmac, timingSafeEqual } from 'node:crypto';

/*
 * The signature of a webhook delivery (docs/ledger.md "Webhooks"), as Stripe signs its webhooks:
 * `x-lexec-signature: t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<raw body>">`, keyed with the
 * content of the sink's secret file. The receiver recomputes it over the raw body it received,
 * compares in constant time, and refuses a `t` too far from its clock (a replay).
 */

export const SIGNATURE_HEADER = 'x-lexec-signature';

export function webhookSignature(secret: Buffer, body: string, unixSeconds: number): string {
  const digest = createHmac('sha256', secret).update(`${String(unixSeconds)}.${body}`).digest('hex');
  return `t=${String(unixSeconds)},v1=${digest}`;
}

/**
 * Whether `header` signs `body` with `secret`, at most `toleranceSeconds` from `nowSeconds`
 * (the receiver's check; the ledger's tests use it, docs/ledger.md shows the same in a few lines).
 */
export function verifyWebhookSignature(secret: Buffer | string, body: string, header: string, nowSeconds: number, toleranceSeconds = 300): boolean {
  const parts = new Map(header.split(',').map((part) => [part.slice(0, part.indexOf('=')), part.slice(part.indexOf('=') + 1)] as const));
  const t = Number(parts.get('t'));
  const v1 = parts.get('v1') ?? '';
  if (!Number.isInteger(t) || Math.abs(nowSeconds - t) > toleranceSeconds || !/^[0-9a-f]{64}$/.test(v1)) return false;
  const expected = createHmac('sha256', secret).update(`${String(t)}.${body}`).digest();
  return timingSafeEqual(expected, Buffer.from(v1, 'hex'));
}
