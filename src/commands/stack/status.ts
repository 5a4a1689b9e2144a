import { LexecCommand } from '../../cli/lexec-command.js';
import type { Output } from '../../terminal/output.js';
import { profileFlags } from '../../cli/profile-flags.js';
import { renderStatusResult } from '../../launcher/status/render-status.js';
import { stackStatus, type StatusResult } from '../../launcher/status/stack-status.js';

export default class StackStatus extends LexecCommand<StatusResult> {
  static override summary = 'Show the profile\'s stack: each component\'s state, pid, port, uptime, restarts, readiness and log size.';
  static override description =
    'Read-only. Overall state running, stopped or degraded; exit 0 in every case (the state is the answer). Readiness is one quick loopback probe per component. Details: docs/stack-runtime.md.';
  static override examples = ['<%= config.bin %> <%= command.id %>', '<%= config.bin %> <%= command.id %> --json'];
  static override flags = { ...profileFlags };

  protected override async execute(): Promise<StatusResult> {
    const { flags } = await this.parse(StackStatus);
    return stackStatus({ env: process.env, profileFlag: flags.profile });
  }

  protected override renderHuman(result: StatusResult, output: Output): void {
    renderStatusResult(result, output);
  }
}
