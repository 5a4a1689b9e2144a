import { ApiError } from '../../http/api-error.js';
import { ExecutorError, type ExecutorErrorKind } from '../executor-error.js';

/** The one place an executor refusal gets its HTTP status (docs/executor-api.md). */
const STATUS: Readonly<Record<ExecutorErrorKind, number>> = {
  invalid: 400,
  not_found: 404,
  conflict: 409,
  unprocessable: 422,
  unavailable: 503,
  internal: 500,
};

/** The HTTP answer for an executor refusal; null for anything else (the server's own handler decides). */
export function toApiError(error: unknown): ApiError | null {
  if (!(error instanceof ExecutorError)) return null;
  return new ApiError(STATUS[error.kind], error.code, { reasonCode: error.reasonCode, fields: error.fields, retryable: error.retryable });
}
