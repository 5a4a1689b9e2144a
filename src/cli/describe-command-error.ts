import { stripVTControlCharacters } from 'node:util';
import { BugError, ExitCode, UsageError, UserError, type ExitCodeValue } from '../errors.js';
import type { JsonErrorBody } from './json-envelope.js';

export interface DescribedError {
  readonly body: JsonErrorBody;
  readonly exitCode: ExitCodeValue;
}

const HELP_HINT = 'Run the command with --help to see its flags.';

/** oclif's parse errors carry a `parse` object; their classes are not exported, so recognise them by shape. */
function isOclifParseError(error: unknown): error is Error & { parse: unknown; flags?: unknown; args?: unknown } {
  return error instanceof Error && 'parse' in error && 'showHelp' in error;
}

/**
 * oclif's parse messages can quote what was typed (`--flag=value`, stray arguments). A typed
 * value may be a secret pasted in the wrong place, so the message is rebuilt from names only.
 */
function describeParseError(error: Error & { flags?: unknown; args?: unknown }): UsageError {
  const kind = error.constructor.name;
  if (kind === 'NonExistentFlagsError' && Array.isArray(error.flags)) {
    const names = error.flags.map((flag) => String(flag).split('=')[0]);
    return new UsageError('unknown_flag', `Unknown flag${names.length === 1 ? '' : 's'}: ${names.join(', ')}.`, {
      nextStep: HELP_HINT,
    });
  }
  if (kind === 'UnexpectedArgsError' && Array.isArray(error.args)) {
    const count = error.args.length;
    return new UsageError('unexpected_argument', `${count} unexpected positional argument${count === 1 ? '' : 's'}.`, {
      nextStep: HELP_HINT,
    });
  }
  const optionMatch = /^Expected --([\w-]+)=[\s\S]* to be one of: ([\w, -]+)$/m.exec(stripVTControlCharacters(error.message));
  if (optionMatch) {
    return new UsageError('invalid_flag_value', `--${optionMatch[1] ?? ''} must be one of: ${optionMatch[2] ?? ''}.`, {
      nextStep: HELP_HINT,
    });
  }
  const message = stripVTControlCharacters(error.message)
    .replace(/\nSee more help with --help\s*$/, '')
    .replace(/(--[\w-]+)=\S+/g, '$1=…')
    .trim();
  return new UsageError('usage_error', message, { nextStep: HELP_HINT });
}

/** The one mapping from anything a command threw to what the operator sees and the exit code. */
/**
 * oclif's parser throws a plain Error (no class, no `parse`) for a flag given twice, a flag given
 * last with no value (`--since` and nothing after it), or one whose value is missing among
 * options; recognised by their messages, which name only the flag (and its options), never what
 * was typed.
 */
function plainParseError(error: unknown): UsageError | null {
  if (!(error instanceof Error)) return null;
  const message = stripVTControlCharacters(error.message);
  const repeated = /^Flag (--[a-z][a-z0-9-]*) can only be specified once$/.exec(message);
  if (repeated !== null) return new UsageError('usage_error', `${repeated[1] ?? 'A flag'} is given more than once; give it once.`, { nextStep: HELP_HINT });
  const valueless = /^Flag (--[a-z][a-z0-9-]*) expects a value$/.exec(message);
  if (valueless !== null) return new UsageError('missing_flag_value', `${valueless[1] ?? 'A flag'} needs a value after it.`, { nextStep: HELP_HINT });
  const optionless = /^Flag (--[a-z][a-z0-9-]*) expects one of these values: ([\w, -]+)$/.exec(message);
  if (optionless !== null) return new UsageError('missing_flag_value', `${optionless[1] ?? 'A flag'} needs one of: ${optionless[2] ?? ''}.`, { nextStep: HELP_HINT });
  return null;
}

export function describeCommandError(error: unknown): DescribedError {
  const known = isOclifParseError(error) ? describeParseError(error) : (plainParseError(error) ?? error);
  if (known instanceof UserError) {
    return {
      exitCode: known.exitCode,
      body: {
        kind: known instanceof UsageError ? 'usage' : 'user',
        code: known.code,
        message: known.message,
        next_step: known.nextStep,
        issues: known.issues,
      },
    };
  }
  const detail = error instanceof BugError ? error.message : 'an unexpected error escaped a command';
  return {
    exitCode: ExitCode.bug,
    body: {
      kind: 'bug',
      code: 'internal_error',
      message: `Internal error: ${detail}. This is a bug in lexec.`,
      next_step: 'Report it with the command you ran (not its secrets); rerun with LEXEC_DEBUG=1 to print the stack trace.',
      issues: [],
    },
  };
}
