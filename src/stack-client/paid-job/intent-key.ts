import { fingerprint } from '../../domain/canonical-json.js';
import type { JobQuote } from './quote.js';

/*
 * The idempotency key of a paid job's spend request (docs/ledger.md "Idempotent requests"),
 * derived from the job's intent — exactly what the job sends: the ledger request (the quoted
 * amount, currency, and the purpose, which names the client) and the execution's input (target,
 * prompt, size, count). The same command run again — the up-arrow while a request awaits approval
 * — sends the same key, so the ledger answers the request still open instead of opening a second
 * one; any other job has another key. Pure: no I/O.
 */

/** `intent-` and the first 32 hex digits (128 bits) of the SHA-256 of the intent's canonical JSON. */
export function intentKey(quote: JobQuote, purpose: string, prompt: string): string {
  const hash = fingerprint({
    ledger: { amount_units: quote.amountUnits, currency: quote.snapshot.currency, purpose },
    execution: { target_id: quote.target.target_id, prompt, image_size: quote.imageSize, image_count: quote.imageCount },
  });
  return `intent-${hash.slice(0, 32)}`;
}
