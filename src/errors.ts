/**
 * The two kinds of error lexec raises (STYLE.md habit 4). A `UserError` means the operator must
 * act: it carries a stable `code`, a message that never echoes submitted or secret values, a
 * next step, and optionally the field paths at fault. Anything else that escapes is a bug.
 * Each surface (CLI, HTTP) maps both kinds in exactly one handler.
 */

/** Process exit codes of every lexec command. Documented in docs/exit-codes.md. */
export const ExitCode = {
  ok: 0,
  failure: 1,
  usage: 2,
  doctorFailed: 3,
  readinessTimeout: 4,
  profileLocked: 5,
  /** `lexec run`: the execution succeeded with fewer images than asked (billed for those delivered); the result is printed. */
  partialDelivery: 6,
  /** `stack status`: the stack is not usable (stopped or degraded); the report is still printed. */
  stackNotUsable: 7,
  bug: 70,
  /** Stopped by Ctrl-C (SIGINT) at a safe point; the shell convention 128 + 2. */
  interrupted: 130,
} as const;
export type ExitCodeValue = (typeof ExitCode)[keyof typeof ExitCode];

/** One problem with one field of an input document, named by its path (`a.b[0].c`). */
export interface FieldIssue {
  readonly path: string;
  readonly message: string;
}

export interface UserErrorOptions {
  readonly nextStep: string;
  readonly issues?: readonly FieldIssue[];
  readonly exitCode?: ExitCodeValue;
}

export class UserError extends Error {
  readonly code: string;
  readonly nextStep: string;
  readonly issues: readonly FieldIssue[];
  readonly exitCode: ExitCodeValue;

  constructor(code: string, message: string, options: UserErrorOptions) {
    super(message);
    this.name = 'UserError';
    this.code = code;
    this.nextStep = options.nextStep;
    this.issues = options.issues ?? [];
    this.exitCode = options.exitCode ?? ExitCode.failure;
  }
}

/** The command line itself is wrong: unknown flag, missing flag, bad flag value. Exit 2. */
export class UsageError extends UserError {
  constructor(code: string, message: string, options: Omit<UserErrorOptions, 'exitCode'>) {
    super(code, message, { ...options, exitCode: ExitCode.usage });
    this.name = 'UsageError';
  }
}

/** A broken invariant inside lexec. Never caused by input; always worth a report. */
export class BugError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'BugError';
  }
}

/**
 * The `code` of a Node.js system error (`ENOENT`, `EACCES`, `EADDRINUSE`, …), or undefined when
 * the thrown value carries none. Safe on anything thrown, which need not be an Error.
 */
export function errorCode(error: unknown): string | undefined {
  return typeof error === 'object' && error !== null && 'code' in error ? String(error.code) : undefined;
}
