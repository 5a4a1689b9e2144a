import { Flags } from '@oclif/core';
import { wholeNumberFlag } from '../../../cli/flag-values.js';
import { LexecCommand } from '../../../cli/lexec-command.js';
import { profileFlags } from '../../../cli/profile-flags.js';
import { MAX_ROTATION_GRACE_SECONDS } from '../../../credentials/capability.js';
import { metricsAtExecutor, rotateAtExecutor } from '../../../stack-client/executor-role-rotation.js';
import {
  DEFAULT_STACK_ROTATION_GRACE_SECONDS,
  rotateStackCredentials,
  STACK_CREDENTIAL_ROLES,
  type RotateStackCredentialsResult,
} from '../../../stack-client/stack-credential-rotation.js';
import { renderStackRotation } from '../../../stack-client/render-stack-rotation.js';
import type { Output } from '../../../terminal/output.js';

export default class StackCredentialsRotate extends LexecCommand<RotateStackCredentialsResult> {
  static override summary = "Rotate the running stack's own capabilities (all roles, or those named with --role) without stopping it.";
  static override description =
    'Each new capability is written to a private file before the ledger or executor accepts it, then put in place of the old file atomically; the old one keeps working for --grace-seconds (default 60), so clients and executions under way are not interrupted, and clients that hold the old one read the file again when it is refused. The handoff is rewritten. An interrupted rotation is finished by running the command again. Details: docs/credentials.md.';
  static override examples = [
    '<%= config.bin %> <%= command.id %>',
    '<%= config.bin %> <%= command.id %> --role agent --role approver --grace-seconds 0',
    '<%= config.bin %> <%= command.id %> --profile sandbox --json',
  ];
  static override flags = {
    ...profileFlags,
    role: Flags.option({ options: STACK_CREDENTIAL_ROLES, multiple: true, summary: 'A role to rotate (repeatable); default: all of them.' })(),
    'grace-seconds': Flags.string({
      summary: `How long the old capabilities keep working, 0 to ${MAX_ROTATION_GRACE_SECONDS} s; default ${DEFAULT_STACK_ROTATION_GRACE_SECONDS}.`,
    }),
  };

  protected override async execute(): Promise<RotateStackCredentialsResult> {
    const { flags } = await this.parse(StackCredentialsRotate);
    const grace = flags['grace-seconds'];
    return rotateStackCredentials({
      env: process.env,
      profileFlag: flags.profile,
      roles: flags.role ?? [],
      graceSeconds: grace === undefined ? DEFAULT_STACK_ROTATION_GRACE_SECONDS : wholeNumberFlag(grace, '--grace-seconds', 0, MAX_ROTATION_GRACE_SECONDS),
      rotateAtExecutor,
      metricsAtExecutor,
    });
  }

  protected override renderHuman(result: RotateStackCredentialsResult, output: Output): void {
    renderStackRotation(result, output);
  }
}
