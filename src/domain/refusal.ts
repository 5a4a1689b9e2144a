/**
 * What kind of refusal a use case answers with (the ledger's and the executor's alike). The use
 * cases know nothing of HTTP: each server's app gives every kind its status in one place
 * (src/http/refusal-status.ts).
 *
 * - invalid: the request itself is wrong (code `invalid_request`, the field paths at fault);
 * - forbidden: the caller is known but may not do this now (an agent an operator suspended);
 * - not_found: nothing by that id;
 * - conflict: the request disagrees with what is recorded (code `conflict`, a reason code);
 * - unprocessable: well formed, but a rule refuses it (policy, hold, requirement, ceiling);
 * - precondition_failed: the caller's precondition (an expected version) no longer holds; nothing changed;
 * - too_many_requests: the caller asks too often (a velocity limit); `retryAfterSeconds` says when it may ask again;
 * - unavailable: not now, retry the identical request (retryable);
 * - internal: a broken invariant, answered without detail (code `internal_error`).
 */
export type RefusalKind = 'invalid' | 'forbidden' | 'not_found' | 'conflict' | 'unprocessable' | 'precondition_failed' | 'too_many_requests' | 'unavailable' | 'internal';

export interface RefusalOptions {
  readonly reasonCode?: string;
  readonly fields?: readonly string[];
  readonly retryable?: boolean;
  /**
   * What the refused caller needs to know to try again, chosen by the service (e.g. the current
   * version after a stale precondition): plain tokens, never a submitted value.
   */
  readonly details?: Readonly<Record<string, string>>;
  /** How many seconds the caller must wait before asking again (a `too_many_requests` refusal). */
  readonly retryAfterSeconds?: number;
}

/** A refusal with a stable `code`, an optional safe reason code and field paths; never a submitted value. */
export class Refusal extends Error {
  readonly kind: RefusalKind;
  readonly code: string;
  readonly reasonCode: string | undefined;
  readonly fields: readonly string[] | undefined;
  readonly retryable: boolean | undefined;
  readonly details: Readonly<Record<string, string>> | undefined;
  readonly retryAfterSeconds: number | undefined;

  constructor(kind: RefusalKind, code: string, options: RefusalOptions = {}) {
    super(options.reasonCode === undefined ? code : `${code}: ${options.reasonCode}`);
    this.name = 'Refusal';
    this.kind = kind;
    this.code = code;
    this.reasonCode = options.reasonCode;
    this.fields = options.fields;
    this.retryable = options.retryable;
    this.details = options.details;
    this.retryAfterSeconds = options.retryAfterSeconds;
  }
}
