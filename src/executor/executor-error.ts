import { Refusal, type RefusalKind, type RefusalOptions } from '../domain/refusal.js';

/*
 * The executor's refusals (admission, reconciliation): a kind (src/domain/refusal.ts), a stable
 * code, never an HTTP status — the app gives each kind its status in one place
 * (src/http/refusal-status.ts).
 */

export class ExecutorError extends Refusal {
  constructor(kind: RefusalKind, code: string, options: RefusalOptions = {}) {
    super(kind, code, options);
    this.name = 'ExecutorError';
  }
}

export const invalidRequest = (reasonCode: string, fields: readonly string[]) => new ExecutorError('invalid', 'invalid_request', { reasonCode, fields });
export const notFound = () => new ExecutorError('not_found', 'not_found');
export const conflict = (reasonCode: string, fields?: readonly string[]) => new ExecutorError('conflict', 'conflict', { reasonCode, fields });
export const unprocessable = (code: string, options: Omit<RefusalOptions, 'retryable'> = {}) => new ExecutorError('unprocessable', code, options);
/** Not now: the identical request may be retried (the execution, if any, is durable). */
export const notReady = (reasonCode: string) => new ExecutorError('unavailable', 'not_ready', { reasonCode, retryable: true });
export const internalError = () => new ExecutorError('internal', 'internal_error');
