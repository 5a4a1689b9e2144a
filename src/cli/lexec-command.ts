import { Command, Flags } from '@oclif/core';
import { describeCommandError } from './describe-command-error.js';
import { COLOR_CHOICES, type ColorChoice } from '../terminal/color.js';
import { ExitCode, type ExitCodeValue } from '../errors.js';
import { jsonFailure, jsonSuccess } from './json-envelope.js';
import { createOutput, type Output } from '../terminal/output.js';

/**
 * Base of every lexec command. A command parses its flags, calls one service and returns a typed
 * result; this class owns everything around that: the global `--color` and `--json` flags,
 * printing the result on stdout (one JSON document, or human text), and the single
 * error handler that maps what was thrown to a message and an exit code.
 */
export abstract class LexecCommand<Result> extends Command {
  static override baseFlags = {
    color: Flags.option({
      options: COLOR_CHOICES,
      default: 'auto' as const,
      summary: 'Colour human output: auto (terminals only; honours NO_COLOR, FORCE_COLOR, TERM=dumb), always, never.',
      helpGroup: 'GLOBAL',
    })(),
    json: Flags.boolean({
      default: false,
      summary: 'Print the result as JSON on stdout: one document (stack logs: JSON Lines); shapes in docs/cli-output.md.',
      helpGroup: 'GLOBAL',
    }),
  };

  /** Does the work: parse flags (`this.parse`), call one service, return its result. */
  protected abstract execute(output: Output): Promise<Result>;

  /** Human rendering of the result, on stdout through `output.line` (progress and warnings: `output.diagnostics`). */
  protected abstract renderHuman(result: Result, output: Output): void;

  /**
   * The exit code of a result that was printed, when it is not 0. Only a command whose result
   * can itself be a finding overrides it: `stack doctor` prints its report and exits 3 when a
   * check failed, `stack status` exits 6 when the stack is not usable (docs/cli-output.md).
   */
  protected resultExitCode?(result: Result): ExitCodeValue;

  /**
   * The `--json` form of the result when it is not the one-document envelope. Only a command
   * whose result is a stream overrides it: `stack logs` prints JSON Lines (docs/cli-output.md).
   * Failures keep the one failure envelope.
   */
  protected renderJsonLines?(result: Result, output: Output): void;

  /** The command id as typed (`executor validate-config`), used in the JSON envelope. */
  private get commandName(): string {
    return (this.id ?? '').replaceAll(':', ' ');
  }

  override async run(): Promise<void> {
    const early = scanGlobalFlags(this.argv);
    let output: Output | undefined;
    try {
      output = await createOutput({ jsonMode: early.json, color: early.color, env: process.env, streams: process });
      const result = await this.execute(output);
      if (output.jsonMode) {
        if (this.renderJsonLines === undefined) output.json(jsonSuccess(this.commandName, result));
        else this.renderJsonLines(result, output);
      }
      else this.renderHuman(result, output);
      const exitCode = this.resultExitCode?.(result) ?? ExitCode.ok;
      if (exitCode !== ExitCode.ok) process.exitCode = exitCode;
    } catch (error) {
      output ??= await createOutput({ jsonMode: early.json, color: 'never', env: process.env, streams: process });
      reportCommandError(output, this.commandName, error);
    }
  }
}

/**
 * The one error handler of the CLI surface: prints what went wrong in the form the operator asked
 * for (a JSON failure envelope, or human lines on stderr) and sets the exit code.
 */
export function reportCommandError(output: Output, commandName: string, error: unknown): void {
  const { body, exitCode } = describeCommandError(error);
  if (output.jsonMode) {
    output.json(jsonFailure(commandName, body));
  } else {
    const { diagnostics } = output;
    diagnostics.line(`${diagnostics.style.error('Error:')} ${body.message}`);
    for (const issue of body.issues) diagnostics.line(`  ${diagnostics.style.bold(issue.path)}: ${issue.message}`);
    diagnostics.line(diagnostics.style.dim(body.next_step));
  }
  if (body.kind === 'bug' && process.env.LEXEC_DEBUG === '1' && error instanceof Error && error.stack) {
    process.stderr.write(`${error.stack}\n`);
  }
  // Set, not exit: stdout (possibly a pipe) is flushed before the process ends.
  process.exitCode = exitCode;
}

/**
 * Reads `--json` and `--color` from the raw argument list. oclif validates them again when the
 * command parses; reading them first means even a parse error is reported in the form the
 * operator asked for. Stops at `--`, like the parser.
 */
export function scanGlobalFlags(argv: readonly string[]): { json: boolean; color: ColorChoice } {
  let json = false;
  let color: ColorChoice = 'auto';
  for (let index = 0; index < argv.length; index += 1) {
    const arg = argv[index];
    if (arg === '--') break;
    if (arg === '--json') json = true;
    const value = arg === '--color' ? argv[index + 1] : arg?.startsWith('--color=') ? arg.slice('--color='.length) : undefined;
    if (value !== undefined && (COLOR_CHOICES as readonly string[]).includes(value)) color = value as ColorChoice;
  }
  return { json, color };
}
