import { MAX_AMOUNT_UNITS, parseWholeNumber } from '../domain/money.js';
import { EXECUTOR_CREDENTIAL_ID } from '../executor/domain/credential-standing.js';
import { UsageError, type FieldIssue } from '../errors.js';
import { idempotencyKey } from '../ledger/wire/requests.js';

/*
 * Checks of flag and argument values that oclif's parser cannot express. Each failure is a usage
 * error (exit 2) naming the flag and what it expects — never the value typed, which could be a
 * secret pasted into the wrong place.
 */

const HELP = 'Run the command with --help to see its flags.';

function invalid(name: string, expected: string, issues: readonly FieldIssue[] = []): UsageError {
  return new UsageError('invalid_flag_value', `${name} must be ${expected}.`, { nextStep: HELP, issues });
}

/** An amount in micro-units (1 USD = 1000000): digits only, at least 1; never a float. */
export function amountUnitsFlag(value: string, name = '--amount-units'): bigint {
  const parsed = /^[0-9]+$/.test(value) ? parseWholeNumber(value.replace(/^0+(?=.)/, '')) : null;
  if (parsed === null || parsed < 1n || parsed > MAX_AMOUNT_UNITS) {
    throw invalid(name, `a whole number of micro-units from 1 to ${MAX_AMOUNT_UNITS} (1 USD = 1000000; no decimals, signs or exponents)`);
  }
  return parsed;
}

/** A record's version as the ledger answers it (`version`): a whole number from 1, digits only. */
export function versionFlag(value: string, name: string): bigint {
  const parsed = /^[0-9]+$/.test(value) ? parseWholeNumber(value.replace(/^0+(?=.)/, '')) : null;
  if (parsed === null || parsed < 1n || parsed > MAX_AMOUNT_UNITS) {
    throw invalid(name, `a version: a whole number from 1 to ${MAX_AMOUNT_UNITS}, as \`lexec ledger policy show\` shows it`);
  }
  return parsed;
}

/** A budget in micro-units, or `none` (null) to remove it. */
export function budgetUnitsFlag(value: string, name: string): bigint | null {
  return value === 'none' ? null : amountUnitsFlag(value, name);
}

/** Alert percentages: whole numbers 1-100, comma-separated, each once (as the ledger takes them). */
export function alertPercentagesFlag(value: string, name = '--alert-percentages'): number[] {
  const parts = value.split(',').map((part) => part.trim());
  const percentages = parts.map((part) => (/^[0-9]{1,3}$/.test(part) ? Number(part) : Number.NaN));
  const bad = percentages.findIndex((percent, index) => !(percent >= 1 && percent <= 100) || percentages.indexOf(percent) !== index);
  if (bad !== -1) throw invalid(name, 'whole numbers from 1 to 100, comma-separated, each once (for example 50,80,100)', [{ path: name, message: `item ${bad + 1} must be a whole number from 1 to 100, not repeated` }]);
  return [...percentages].sort((a, b) => a - b);
}

/** A whole number within [min, max]. */
export function wholeNumberFlag(value: string, name: string, min: number, max: number): number {
  const parsed = /^[0-9]{1,9}$/.test(value) ? Number(value) : Number.NaN;
  if (!Number.isInteger(parsed) || parsed < min || parsed > max) throw invalid(name, `a whole number from ${min} to ${max}`);
  return parsed;
}

/** A row id the ledger pages by (an event id, a delivery id): a whole number from 0 that SQLite stores (≤ 2^63 − 1). */
export function rowIdFlag(value: string, name: string, what: string): bigint {
  if (!/^[0-9]{1,19}$/.test(value) || BigInt(value) > 9_223_372_036_854_775_807n) throw invalid(name, what);
  return BigInt(value);
}

/** An agent id as the ledger issues it: `agt_` and a UUID. */
export function agentIdFlag(value: string, name = '--agent-id'): string {
  if (!/^agt_[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/.test(value)) {
    throw invalid(name, 'an agent id (agt_ followed by a UUID, as `lexec ledger agents list` shows)');
  }
  return value;
}

/** A credential id, as the ledger names them (letters, digits, _ . : -; at most 128). */
export function credentialIdArgument(value: string): string {
  if (!/^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$/.test(value) || value === 'self') {
    throw new UsageError('invalid_argument', 'CREDENTIAL_ID must be a credential id (as `lexec ledger credentials list` shows it).', { nextStep: HELP });
  }
  return value;
}

/** A spend authorization token id: a UUID. */
export function tokenIdArgument(value: string): string {
  if (!/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(value)) {
    throw new UsageError('invalid_argument', 'TOKEN_ID must be a spend authorization token id (a UUID).', { nextStep: HELP });
  }
  return value.toLowerCase();
}

const DURATION_UNIT_MS = { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;

/**
 * `--since`: an ISO 8601 time (`2026-11-25`, `2026-11-25T10:00:00Z`), or a duration back from
 * `now` (`30s`, `15m`, `2h`, `7d`). Returns the instant in ms since the epoch.
 */
export function sinceFlag(value: string, now: number, name = '--since'): number {
  const duration = /^(\d{1,9})(s|m|h|d)$/.exec(value);
  if (duration !== null) return now - Number(duration[1]) * DURATION_UNIT_MS[duration[2] as keyof typeof DURATION_UNIT_MS];
  const at = /^\d{4}-\d{2}-\d{2}(T[\d:.]+(Z|[+-]\d{2}:\d{2})?)?$/.test(value) ? Date.parse(value) : Number.NaN;
  if (Number.isNaN(at)) {
    const expected = 'a duration back from now (30s, 15m, 2h, 7d) or an ISO 8601 time (2026-11-25 or 2026-11-25T10:00:00Z)';
    throw invalid(name, expected, [{ path: name, message: `must be ${expected}` }]);
  }
  return at;
}

/** An `Idempotency-Key` for a spend request, as the ledger takes it: 1-255 printable ASCII characters. */
export function idempotencyKeyFlag(value: string, name = '--idempotency-key'): string {
  if (!idempotencyKey.safeParse(value).success) throw invalid(name, '1-255 printable ASCII characters (letters, digits, spaces and punctuation)');
  return value;
}

/** An executor credential id as `lexec executor credentials list` shows it: `caller-` or `reconciliation-` and 16 hex digits. */
export function executorCredentialIdArgument(value: string): string {
  if (!EXECUTOR_CREDENTIAL_ID.test(value)) {
    throw new UsageError('invalid_argument', 'CREDENTIAL_ID must be an executor credential id (caller- or reconciliation- and 16 hex digits).', {
      nextStep: '`lexec executor credentials list --config <executor configuration>` lists them.',
    });
  }
  return value;
}
