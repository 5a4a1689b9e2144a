import type { FieldIssue } from '../errors.js';

/**
 * Version of the `--json` envelope. Bump it when a field of the envelope changes meaning or
 * disappears; adding a field is compatible. The shapes are documented in docs/cli-output.md and
 * frozen by snapshot tests.
 */
export const JSON_ENVELOPE_VERSION = 1;

export type ErrorKind = 'user' | 'usage' | 'bug';

export interface JsonErrorBody {
  readonly kind: ErrorKind;
  readonly code: string;
  readonly message: string;
  readonly next_step: string;
  readonly issues: readonly FieldIssue[];
}

export interface JsonSuccess<T> {
  readonly json_version: typeof JSON_ENVELOPE_VERSION;
  readonly command: string;
  readonly ok: true;
  readonly result: T;
}

export interface JsonFailure {
  readonly json_version: typeof JSON_ENVELOPE_VERSION;
  readonly command: string;
  readonly ok: false;
  readonly error: JsonErrorBody;
}

export function jsonSuccess<T>(command: string, result: T): JsonSuccess<T> {
  return { json_version: JSON_ENVELOPE_VERSION, command, ok: true, result };
}

export function jsonFailure(command: string, error: JsonErrorBody): JsonFailure {
  return { json_version: JSON_ENVELOPE_VERSION, command, ok: false, error };
}
