import { Flags } from '@oclif/core';
import { wholeNumberFlag } from '../../cli/flag-values.js';
import { LexecCommand } from '../../cli/lexec-command.js';
import type { Output } from '../../terminal/output.js';
import { profileFlags } from '../../cli/profile-flags.js';
import { renderStopEvent, renderStopResult } from '../../launcher/start-stop/render-start-stop.js';
import { DEFAULT_DRAIN_BOUND_MS, stopStack, type StopResult } from '../../launcher/start-stop/stack-stop.js';

export default class StackStop extends LexecCommand<StopResult> {
  static override summary = 'Stop the profile\'s stack: executor and sandbox, then the ledger; the handoff is withdrawn first.';
  static override description =
    'Graceful (SIGTERM) then forced (SIGKILL) after a bound; leaves no process of the stack behind, including children of a supervisor that was killed. Executions in flight are durable: without --wait they resume at the next start; with --wait the stop first lets them finish (clients already connected keep following them and saving their images; no new client finds the stack meanwhile), and Ctrl-C during that wait calls the stop off. Stopping a stopped stack is fine (exit 0). Details: docs/stack-runtime.md.';
  static override examples = ['<%= config.bin %> <%= command.id %>', '<%= config.bin %> <%= command.id %> --wait', '<%= config.bin %> <%= command.id %> --profile sandbox --json'];
  static override flags = {
    ...profileFlags,
    wait: Flags.boolean({ summary: 'Let executions in flight finish first (up to --wait-timeout), then stop.' }),
    'wait-timeout': Flags.string({ summary: `With --wait: seconds to wait at most (1-86400; default ${DEFAULT_DRAIN_BOUND_MS / 1000}); past it the stop goes on and the rest resume at the next start.`, dependsOn: ['wait'] }),
  };

  protected override async execute(output: Output): Promise<StopResult> {
    const { flags } = await this.parse(StackStop);
    const drainBoundMs = !flags.wait ? undefined : flags['wait-timeout'] === undefined ? DEFAULT_DRAIN_BOUND_MS : wholeNumberFlag(flags['wait-timeout'], '--wait-timeout', 1, 86_400) * 1000;
    // Ctrl-C while --wait waits calls the stop off (a second one quits at once); once the stop itself began, Ctrl-C is as without --wait.
    const interrupt = new AbortController();
    const onSigint = () => {
      if (interrupt.signal.aborted) process.exit(130);
      output.diagnostics.line(output.diagnostics.style.dim('Calling the stop off… (Ctrl-C again to quit at once)'));
      interrupt.abort();
    };
    if (drainBoundMs !== undefined) process.on('SIGINT', onSigint);
    try {
      return await stopStack({
        env: process.env,
        profileFlag: flags.profile,
        drainBoundMs,
        signal: interrupt.signal,
        progress: (event) => {
          if (event.kind === 'stopping_supervisor') process.off('SIGINT', onSigint);
          renderStopEvent(event, output);
        },
      });
    } finally {
      process.off('SIGINT', onSigint);
    }
  }

  protected override renderHuman(result: StopResult, output: Output): void {
    renderStopResult(result, output);
  }
}
