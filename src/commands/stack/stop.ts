import { LexecCommand } from '../../cli/lexec-command.js';
import type { Output } from '../../terminal/output.js';
import { profileFlags } from '../../cli/profile-flags.js';
import { renderStopEvent, renderStopResult } from '../../launcher/start-stop/render-start-stop.js';
import { stopStack, type StopResult } from '../../launcher/start-stop/stack-stop.js';

export default class StackStop extends LexecCommand<StopResult> {
  static override summary = 'Stop the profile\'s stack: executor and sandbox, then the ledger; the handoff is withdrawn first.';
  static override description =
    'Graceful (SIGTERM) then forced (SIGKILL) after a bound; leaves no process of the stack behind, including children of a supervisor that was killed. Stopping a stopped stack is fine (exit 0). Details: docs/stack-runtime.md.';
  static override examples = ['<%= config.bin %> <%= command.id %>', '<%= config.bin %> <%= command.id %> --profile sandbox --json'];
  static override flags = { ...profileFlags };

  protected override async execute(output: Output): Promise<StopResult> {
    const { flags } = await this.parse(StackStop);
    return stopStack({
      env: process.env,
      profileFlag: flags.profile,
      progress: (event) => {
        renderStopEvent(event, output);
      },
    });
  }

  protected override renderHuman(result: StopResult, output: Output): void {
    renderStopResult(result, output);
  }
}
