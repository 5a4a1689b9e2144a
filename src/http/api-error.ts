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

  constructor(status: number, code: string, options: { reasonCode?: string; fields?: readonly string[]; retryable?: boolean } = {}) {
    super(options.reasonCode === undefined ? code : `${code}: ${options.reasonCode}`);
    this.name = 'ApiError';
    this.status = status;
    this.code = code;
    this.reasonCode = options.reasonCode;
    this.fields = options.fields;
    this.retryable = options.retryable;
  }

  toBody(): { error: Record<string, unknown> } {
    return {
      error: {
        code: this.code,
        ...(this.reasonCode === undefined ? {} : { reason_code: this.reasonCode }),
        ...(this.fields === undefined ? {} : { fields: this.fields }),
        ...(this.retryable === undefined ? {} : { retryable: this.retryable }),
      },
    };
  }
}
