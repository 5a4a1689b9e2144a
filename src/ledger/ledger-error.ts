import { Refusal, type RefusalKind, type RefusalOptions } from '../domain/refusal.js';

/*
 * The ledger's refusals (service and admin use cases): a kind (src/domain/refusal.ts), a stable
 * code, never an HTTP status — the app gives each kind its status in one place
 * (src/http/refusal-status.ts).
 */

export class LedgerError extends Refusal {
  constructor(kind: RefusalKind, code: string, options: RefusalOptions = {}) {
    super(kind, code, options);
    this.name = 'LedgerError';
  }
}

export const notFound = () => new LedgerError('not_found', 'not_found');
export const forbidden = (reasonCode: string, details?: Readonly<Record<string, string>>) => new LedgerError('forbidden', 'forbidden', { reasonCode, details });
/** The caller asks too often; it may ask again after `retryAfterSeconds` (HTTP 429 with `Retry-After`). */
export const tooManyRequests = (reasonCode: string, retryAfterSeconds: number, details?: Readonly<Record<string, string>>) =>
  new LedgerError('too_many_requests', 'too_many_requests', { reasonCode, retryAfterSeconds, details });
export const conflict = (reasonCode: string, fields?: readonly string[]) => new LedgerError('conflict', 'conflict', { reasonCode, fields });
export const unprocessable = (code: string, reasonCode?: string, fields?: readonly string[]) => new LedgerError('unprocessable', code, { reasonCode, fields });
/** The caller expected another version of a record (`If-Match`); `current` is the version it has, so the caller can look and try again. */
export const versionMismatch = (code: string, current: bigint) => new LedgerError('precondition_failed', code, { details: { current_version: current.toString() } });
