import { LexecCommand } from '../../cli/lexec-command.js';
import type { Output } from '../../terminal/output.js';
import { profileFlags } from '../../cli/profile-flags.js';
import type { SupervisorStopped } from '../../launcher/supervisor/stack-supervisor.js';

export default class StackSupervise extends LexecCommand<SupervisorStopped> {
  static override hidden = true;
  static override summary = 'Launcher-internal: the supervisor of a profile\'s stack, started detached by `lexec stack start`.';
  static override description = 'Not a human command: use `lexec stack start` and `lexec stack stop`. Runs until SIGTERM or SIGINT; its events go to logs/supervisor.log.';
  static override flags = { ...profileFlags };

  protected override async execute(): Promise<SupervisorStopped> {
    const { flags } = await this.parse(StackSupervise);
    const { superviseStack } = await import('../../launcher/supervisor/stack-supervisor.js');
    return superviseStack({ env: process.env, profileFlag: flags.profile });
  }

  protected override renderHuman(result: SupervisorStopped, output: Output): void {
    output.line(`supervisor ${result.status} (${result.signal ?? 'no signal'})`);
  }
}
