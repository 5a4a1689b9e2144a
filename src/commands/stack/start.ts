import { Flags } from '@oclif/core';
import { wholeNumberFlag } from '../../cli/flag-values.js';
import { LexecCommand } from '../../cli/lexec-command.js';
import type { Output } from '../../terminal/output.js';
import { profileFlags } from '../../cli/profile-flags.js';
import { renderStartOutcome, renderStartResult } from '../../launcher/start-stop/render-start-stop.js';
import { createStartProgress } from '../../launcher/start-stop/render-start-progress.js';
import { holdInForeground, type ForegroundEnd } from '../../launcher/start-stop/stack-foreground.js';
import { startStack, type StartResult } from '../../launcher/start-stop/stack-start.js';

export type StartCommandResult = StartResult & { readonly foreground: ForegroundEnd | null };

export default class StackStart extends LexecCommand<StartCommandResult> {
  static override summary = 'Start the profile\'s stack (ledger, executor, sandbox provider) and wait until it is ready.';
  static override description =
    'The first start creates the sandbox profile from the shipped example and activates its first generation. A supervisor process then owns the stack: it writes the logs and restarts a crashed component. A second start of a running stack restarts nothing (exit 0); it writes a missing or stale handoff again and says so. A profile.toml that no longer renders, a busy port, a supervisor failure: exit 1 (issues by key path). A failed preflight doctor check: exit 3. A component not ready in time: exit 4, naming it, its last probe error and its last log lines. Another launcher command on the profile: exit 5. Details: docs/stack-runtime.md.';
  static override examples = ['<%= config.bin %> <%= command.id %>', '<%= config.bin %> <%= command.id %> --profile sandbox --json', '<%= config.bin %> <%= command.id %> --foreground'];
  static override flags = {
    ...profileFlags,
    timeout: Flags.string({ default: '60', summary: 'Seconds to wait for every component to be ready (1-3600).' }),
    foreground: Flags.boolean({ default: false, summary: 'Stay attached once ready; Ctrl-C stops the stack.' }),
  };

  protected override async execute(output: Output): Promise<StartCommandResult> {
    const { flags } = await this.parse(StackStart);
    const timeoutMs = wholeNumberFlag(flags.timeout, '--timeout', 1, 3600) * 1000;
    const progress = await createStartProgress(output);
    const result = await startStack({ env: process.env, profileFlag: flags.profile, timeoutMs, progress, now: () => new Date() });
    if (!flags.foreground) return { ...result, foreground: null };
    if (!output.jsonMode) renderStartResult(result, output);
    return { ...result, foreground: await holdInForeground({ env: process.env, profile: result.profile, progress }) };
  }

  protected override renderHuman(result: StartCommandResult, output: Output): void {
    renderStartOutcome(result, output);
  }
}
