import { Errors } from '@oclif/core';
import { describe, expect, it } from 'vitest';
import { describeCommandError } from '../../src/cli/describe-command-error.js';
import { BugError, ExitCode, UsageError, UserError } from '../../src/errors.js';

/** Builds an error shaped like oclif's (unexported) parse error classes. */
function parseError(className: string, message: string, extra: Record<string, unknown> = {}): Error {
  const error = Object.assign(new Errors.CLIError(message), { parse: {}, showHelp: false }, extra);
  Object.defineProperty(error, 'constructor', { value: { name: className } });
  return error;
}

describe('describeCommandError', () => {
  it('maps a user error to its code, next step, issues and exit 1', () => {
    const error = new UserError('config_invalid', 'The configuration file /x has 1 problem.', {
      nextStep: 'Fix it.',
      issues: [{ path: 'http.port', message: 'required' }],
    });
    expect(describeCommandError(error)).toEqual({
      exitCode: ExitCode.failure,
      body: {
        kind: 'user',
        code: 'config_invalid',
        message: 'The configuration file /x has 1 problem.',
        next_step: 'Fix it.',
        issues: [{ path: 'http.port', message: 'required' }],
      },
    });
  });

  it('maps a usage error to exit 2', () => {
    const described = describeCommandError(new UsageError('config_path_not_absolute', 'relative', { nextStep: 'x' }));
    expect(described.exitCode).toBe(ExitCode.usage);
    expect(described.body.kind).toBe('usage');
  });

  it('maps a bug, or anything unexpected, to internal_error and exit 70 without its message', () => {
    const unexpected = describeCommandError(new TypeError('secret-ish detail'));
    expect(unexpected.exitCode).toBe(ExitCode.bug);
    expect(unexpected.body).toMatchObject({ kind: 'bug', code: 'internal_error' });
    expect(unexpected.body.message).not.toContain('secret-ish detail');
    expect(describeCommandError(new BugError('invariant broken')).body.message).toContain('invariant broken');
  });

  it('rebuilds oclif parse errors from names only, never typed values', () => {
    const unknown = describeCommandError(parseError('NonExistentFlagsError', 'Nonexistent flag: --token=abc', { flags: ['--token=abc'] }));
    expect(unknown).toMatchObject({ exitCode: 2, body: { code: 'unknown_flag', message: 'Unknown flag: --token.' } });

    const stray = describeCommandError(parseError('UnexpectedArgsError', 'Unexpected arguments: a, b', { args: ['a', 'b'] }));
    expect(stray.body).toMatchObject({ code: 'unexpected_argument', message: '2 unexpected positional arguments.' });

    const option = describeCommandError(parseError('FlagInvalidOptionError', 'Expected --color=pink to be one of: auto, always, never\nSee more help with --help'));
    expect(option.body).toMatchObject({ code: 'invalid_flag_value', message: '--color must be one of: auto, always, never.' });

    const other = describeCommandError(parseError('FailedFlagValidationError', 'Bad --config=/secret/path here\nSee more help with --help'));
    expect(other.body.message).toBe('Bad --config=… here');
  });

  it('a flag given twice is a usage error naming the flag (oclif throws a plain Error for it), not a bug', () => {
    const repeated = describeCommandError(new Error('Flag --complete-after-ms can only be specified once'));
    expect(repeated).toMatchObject({ exitCode: 2, body: { kind: 'usage', code: 'usage_error', message: '--complete-after-ms is given more than once; give it once.' } });
  });

  it('a flag given with no value after it is a usage error naming the flag (a plain Error from oclif too), not a bug', () => {
    const valueless = describeCommandError(new Error('Flag --since expects a value'));
    expect(valueless).toMatchObject({ exitCode: 2, body: { kind: 'usage', code: 'missing_flag_value', message: '--since needs a value after it.' } });
    const optionless = describeCommandError(new Error('Flag --format expects one of these values: lexec, slack'));
    expect(optionless).toMatchObject({ exitCode: 2, body: { kind: 'usage', code: 'missing_flag_value', message: '--format needs one of: lexec, slack.' } });
    // Anything else that is not lexec's own stays a bug.
    expect(describeCommandError(new Error('Flag --since expects a value, and more')).body.code).toBe('internal_error');
  });
});
