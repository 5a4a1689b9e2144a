import { resolve } from 'node:path';
import { Args, Flags } from '@oclif/core';
import { IMAGE_SIZE_PRESETS, MAX_IMAGES_PER_EXECUTION } from '../executor/config/executor-config-schema.js';
import { SECRET_TEXT_MESSAGE } from '../domain/secret-text.js';
import { ExitCode, UsageError, type ExitCodeValue } from '../errors.js';
import { MAX_PROMPT_CHARS } from '../executor/domain/execution-request.js';
import { tokenIdArgument, wholeNumberFlag } from '../cli/flag-values.js';
import { LexecCommand } from '../cli/lexec-command.js';
import type { Output } from '../terminal/output.js';
import { profileFlags } from '../cli/profile-flags.js';
import { renderRunProgress, renderRunResult } from '../run/render-run.js';
import { runJob, type RunResult } from '../run/run-job.js';
import { promptProblem } from '../stack-client/paid-job/job-request.js';

export default class Run extends LexecCommand<RunResult> {
  static override summary = 'Generate images on the selected profile: authorize the exact cost, run it, save the files, report the spend.';
  static override description =
    "Needs the profile's stack running (`lexec stack start`). Quotes the request with the executor's own pricing, requests a spend authorization as the profile's local agent, submits the execution, follows it to the end, saves every image into --out (named <execution_id>-<n>.png; an existing file is never replaced) and prints the exact amount settled. Above the policy's approval threshold it prints the approve command and waits (--no-wait returns at once). Ctrl-C stops at a safe point and says how to continue (--authorization). Fewer images delivered than asked (billed for those delivered) is a partial delivery: it is said on stderr and the command exits 6.";
  static override examples = [
    '<%= config.bin %> <%= command.id %> "a lighthouse on a cliff at dusk"',
    '<%= config.bin %> <%= command.id %> "a lighthouse on a cliff at dusk" --size landscape_16_9 --count 2 --out ./images --json',
    '<%= config.bin %> <%= command.id %> "a lighthouse on a cliff at dusk" --count 4 --no-wait',
    '<%= config.bin %> <%= command.id %> "a lighthouse on a cliff at dusk" --count 4 --authorization 0b7e6c1a-2f4d-4c8e-9a51-3d2f8e7c6b10',
  ];
  static override args = { prompt: Args.string({ required: true, description: `What to generate (1-${MAX_PROMPT_CHARS} characters).` }) };
  static override flags = {
    ...profileFlags,
    size: Flags.option({ options: IMAGE_SIZE_PRESETS, summary: "Image size preset (default: the target's default size)." })(),
    count: Flags.string({ default: '1', summary: `Number of images (1-${MAX_IMAGES_PER_EXECUTION}, at most the target's limit).` }),
    out: Flags.string({ default: './lexec-output', summary: 'Directory the images are saved into (created if missing).' }),
    target: Flags.string({ summary: 'Execution target id, when the stack offers more than one (`lexec stack catalog` lists them).' }),
    'no-wait': Flags.boolean({ default: false, summary: 'Return at once (exit 0) when the authorization needs a human approval, with its id.' }),
    timeout: Flags.string({ default: '900', summary: 'Longest time to wait in total, in seconds (approval, admission and execution).' }),
    authorization: Flags.string({ summary: 'Continue with this authorization (after an approval, --no-wait, Ctrl-C or a timeout) instead of requesting a new one.' }),
  };

  protected override async execute(output: Output): Promise<RunResult> {
    const { args, flags } = await this.parse(Run);
    // The stack client's prompt checks (src/stack-client/paid-job/job-request.ts), in the command's words.
    const problem = promptProblem(args.prompt);
    if (problem === 'blank' || problem === 'too_long') {
      throw new UsageError('invalid_argument', `PROMPT must be 1-${MAX_PROMPT_CHARS} characters and not blank.`, { nextStep: 'Run `lexec run --help` to see its arguments.' });
    }
    if (problem === 'secret') {
      throw new UsageError('invalid_argument', `PROMPT ${SECRET_TEXT_MESSAGE}.`, { nextStep: 'Remove the secret from the prompt and run again.' });
    }
    const count = wholeNumberFlag(flags.count, '--count', 1, MAX_IMAGES_PER_EXECUTION);
    const timeoutSeconds = wholeNumberFlag(flags.timeout, '--timeout', 1, 86_400);
    const authorization = flags.authorization === undefined ? undefined : tokenIdArgument(flags.authorization);

    // Ctrl-C: stop at the next safe point (a second Ctrl-C quits at once, like any program).
    const interrupt = new AbortController();
    const onSigint = () => {
      if (interrupt.signal.aborted) process.exit(130);
      output.diagnostics.line(output.diagnostics.style.dim('Stopping at the next safe point… (Ctrl-C again to quit at once)'));
      interrupt.abort();
    };
    process.on('SIGINT', onSigint);
    try {
      return await runJob({
        env: process.env,
        profile: flags.profile,
        prompt: args.prompt,
        size: flags.size,
        count,
        target: flags.target,
        outDir: resolve(flags.out),
        wait: !flags['no-wait'],
        timeoutMs: timeoutSeconds * 1000,
        authorization,
        signal: interrupt.signal,
        progress: (event) => {
          renderRunProgress(event, output);
        },
      });
    } finally {
      process.off('SIGINT', onSigint);
    }
  }

  /** A partial delivery is printed as a result, and exits 6 so that a script never takes it for the images it asked for. */
  protected override resultExitCode(result: RunResult): ExitCodeValue {
    return result.delivery?.partial === true ? ExitCode.partialDelivery : ExitCode.ok;
  }

  protected override renderHuman(result: RunResult, output: Output): void {
    renderRunResult(result, output);
  }
}
