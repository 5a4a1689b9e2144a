import { Flags } from '@oclif/core';
import { wholeNumberFlag } from '../../../cli/flag-values.js';
import { LexecCommand } from '../../../cli/lexec-command.js';
import type { Output } from '../../../terminal/output.js';
import { MAX_ROTATION_GRACE_SECONDS } from '../../../credentials/capability.js';
import { ROTATABLE_EXECUTOR_CREDENTIAL_KINDS } from '../../../executor/domain/credential-standing.js';
import { rotateExecutorCredential, type RotateExecutorCredentialResult } from '../../../executor/credentials/rotate-executor-credential.js';
import { renderExecutorCredentialRotation } from '../../../executor/credentials/render-executor-credentials.js';

export default class ExecutorCredentialsRotate extends LexecCommand<RotateExecutorCredentialResult> {
  static override summary = "Replace a managed executor's caller or reconciliation capability, the old one accepted for an optional grace.";
  static override description =
    'Registers a new capability, writes it over the managed file atomically, then ends the old one: at once (no --grace-seconds, or 0) or when the grace is over; both are accepted meanwhile. The executor may be running; executions under way are not affected. Managed credentials only. Never prints a capability. Details: docs/credentials.md "Rotating".';
  static override examples = [
    '<%= config.bin %> <%= command.id %> --config /var/lib/lexec/executor.json --role caller --grace-seconds 300',
    '<%= config.bin %> <%= command.id %> --config /var/lib/lexec/executor.json --role reconciliation --json',
  ];
  static override flags = {
    config: Flags.string({ required: true, summary: 'Absolute path of the executor configuration (credentials.mode "managed").' }),
    role: Flags.option({ options: ROTATABLE_EXECUTOR_CREDENTIAL_KINDS, required: true, summary: 'Which capability to replace.' })(),
    'grace-seconds': Flags.string({ summary: `How long the old capability stays accepted: 0 (refused at once, the default) to ${MAX_ROTATION_GRACE_SECONDS}.` }),
  };

  protected override async execute(): Promise<RotateExecutorCredentialResult> {
    const { flags } = await this.parse(ExecutorCredentialsRotate);
    const graceSeconds = flags['grace-seconds'] === undefined ? 0 : wholeNumberFlag(flags['grace-seconds'], '--grace-seconds', 0, MAX_ROTATION_GRACE_SECONDS);
    return rotateExecutorCredential({ configPath: flags.config, role: flags.role, graceSeconds });
  }

  protected override renderHuman(result: RotateExecutorCredentialResult, output: Output): void {
    renderExecutorCredentialRotation(result, output);
  }
}
