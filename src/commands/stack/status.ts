import { LexecCommand } from '../../cli/lexec-command.js';
import { ExitCode, type ExitCodeValue } from '../../errors.js';
import type { Output } from '../../terminal/output.js';
import { profileFlags } from '../../cli/profile-flags.js';
import { renderStatusResult } from '../../launcher/status/render-status.js';
import { stackStatus, type StatusResult } from '../../launcher/status/stack-status.js';

export default class StackStatus extends LexecCommand<StatusResult> {
  static override summary = 'Show the profile\'s stack: each component\'s state, pid, port, uptime, restarts, readiness and log size.';
  static override description =
    'Read-only. Overall state running, stopped or degraded. Exit 0 when the stack is usable (running, every component ready, handoff active), 7 when it is not (stopped or degraded); the report is printed either way. Readiness is one quick loopback probe per component. Details: docs/stack-runtime.md.';
  static override examples = ['<%= config.bin %> <%= command.id %>', '<%= config.bin %> <%= command.id %> --json'];
  static override flags = { ...profileFlags };

  protected override async execute(): Promise<StatusResult> {
    const { flags } = await this.parse(StackStatus);
    return stackStatus({ env: process.env, profileFlag: flags.profile });
  }

  protected override renderHuman(result: StatusResult, output: Output): void {
    renderStatusResult(result, output);
  }

  protected override resultExitCode(result: StatusResult): ExitCodeValue {
    return result.usable ? ExitCode.ok : ExitCode.stackNotUsable;
  }
}
