/** The keys every error body may carry; a detail never takes one of them. */
const STANDARD_KEYS = new Set(['code', 'reason_code', 'fields', 'retryable', 'retry_after_seconds']);

/**
 * An error an HTTP route answers with: status, stable code, optional safe reason code and field
 * paths. Bodies never echo submitted values. One error handler per server maps these (and
 * anything unexpected, as 500 `internal_error`) to `{"error":{…}}`. Use cases never throw it:
 * they throw a `Refusal` (src/domain/refusal.ts), given its status by refusal-status.ts.
 */
export class ApiError extends Error {
  readonly status: number;
  readonly code: string;
  readonly reasonCode: string | undefined;
  readonly fields: readonly string[] | undefined;
  readonly retryable: boolean | undefined;
  /** Facts the server chose for the caller (e.g. `current_version`), written beside `code`; never a submitted value. */
  readonly details: Readonly<Record<string, string>> | undefined;
  /** Seconds until the caller may ask again: the `Retry-After` header of a 429, and `retry_after_seconds` in the body. */
  readonly retryAfterSeconds: number | undefined;

  constructor(
    status: number,
    code: string,
    options: { reasonCode?: string; fields?: readonly string[]; retryable?: boolean; details?: Readonly<Record<string, string>>; retryAfterSeconds?: number | undefined } = {},
  ) {
    super(options.reasonCode === undefined ? code : `${code}: ${options.reasonCode}`);
    this.name = 'ApiError';
    this.status = status;
    this.code = code;
    this.reasonCode = options.reasonCode;
    this.fields = options.fields;
    this.retryable = options.retryable;
    this.details = options.details;
    this.retryAfterSeconds = options.retryAfterSeconds;
  }

  toBody(): { error: Record<string, unknown> } {
    return {
      error: {
        code: this.code,
        ...(this.reasonCode === undefined ? {} : { reason_code: this.reasonCode }),
        ...(this.fields === undefined ? {} : { fields: this.fields }),
        ...(this.retryable === undefined ? {} : { retryable: this.retryable }),
        ...(this.retryAfterSeconds === undefined ? {} : { retry_after_seconds: this.retryAfterSeconds }),
        // After the standard keys, and never one of them.
        ...Object.fromEntries(Object.entries(this.details ?? {}).filter(([key]) => !STANDARD_KEYS.has(key))),
      },
    };
  }
}
