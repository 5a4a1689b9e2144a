/**
 * What kind of refusal an executor use case (admission, reconciliation) answers with. The
 * executor's HTTP app turns each kind into a status in one place (http/to-api-error.ts); the use
 * cases know nothing of HTTP.
 *
 * - invalid: the request itself is wrong (code `invalid_request`, the field paths at fault);
 * - not_found: nothing by that id;
 * - conflict: the request disagrees with what is recorded (code `conflict`, a reason code);
 * - unprocessable: well formed, but the authorization or the spend ceiling refuses it;
 * - unavailable: not now, retry the identical request (code `not_ready`, retryable);
 * - internal: a broken invariant, answered without detail (code `internal_error`).
 */
export type ExecutorErrorKind = 'invalid' | 'not_found' | 'conflict' | 'unprocessable' | 'unavailable' | 'internal';

export interface ExecutorErrorOptions {
  readonly reasonCode?: string;
  readonly fields?: readonly string[];
  readonly retryable?: boolean;
}

/** A refusal with a stable `code`, an optional safe reason code and field paths; never a submitted value. */
export class ExecutorError extends Error {
  readonly kind: ExecutorErrorKind;
  readonly code: string;
  readonly reasonCode: string | undefined;
  readonly fields: readonly string[] | undefined;
  readonly retryable: boolean | undefined;

  constructor(kind: ExecutorErrorKind, code: string, options: ExecutorErrorOptions = {}) {
    super(options.reasonCode === undefined ? code : `${code}: ${options.reasonCode}`);
    this.name = 'ExecutorError';
    this.kind = kind;
    this.code = code;
    this.reasonCode = options.reasonCode;
    this.fields = options.fields;
    this.retryable = options.retryable;
  }
}

export const invalidRequest = (reasonCode: string, fields: readonly string[]) => new ExecutorError('invalid', 'invalid_request', { reasonCode, fields });
export const notFound = () => new ExecutorError('not_found', 'not_found');
export const conflict = (reasonCode: string, fields?: readonly string[]) => new ExecutorError('conflict', 'conflict', { reasonCode, fields });
export const unprocessable = (code: string, options: Omit<ExecutorErrorOptions, 'retryable'> = {}) => new ExecutorError('unprocessable', code, options);
/** Not now: the identical request may be retried (the execution, if any, is durable). */
export const notReady = (reasonCode: string) => new ExecutorError('unavailable', 'not_ready', { reasonCode, retryable: true });
export const internalError = () => new ExecutorError('internal', 'internal_error');
