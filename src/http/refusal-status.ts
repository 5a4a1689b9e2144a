import { Refusal, type RefusalKind } from '../domain/refusal.js';
import { ApiError } from './api-error.js';

/**
 * The one place a use case's refusal gets its HTTP status, for the ledger's and the executor's
 * apps alike (docs/ledger.md, docs/executor.md); given to the server's one error handler as
 * `mapError`.
 */
const STATUS: Readonly<Record<RefusalKind, number>> = {
  invalid: 400,
  forbidden: 403,
  not_found: 404,
  conflict: 409,
  unprocessable: 422,
  precondition_failed: 412,
  too_many_requests: 429,
  unavailable: 503,
  internal: 500,
};

/** The HTTP answer for a refusal; null for anything else (the server's own handler decides). */
export function toApiError(error: unknown): ApiError | null {
  if (!(error instanceof Refusal)) return null;
  return new ApiError(STATUS[error.kind], error.code, { reasonCode: error.reasonCode, fields: error.fields, retryable: error.retryable, details: error.details, retryAfterSeconds: error.retryAfterSeconds });
}
