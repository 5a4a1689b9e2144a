import { Args, Flags } from '@oclif/core';
import { credentialIdArgument, wholeNumberFlag } from '../../../cli/flag-values.js';
import { LexecCommand } from '../../../cli/lexec-command.js';
import { ledgerTarget, ledgerTargetFlags } from '../../../cli/ledger-flags.js';
import { MAX_ROTATION_GRACE_SECONDS } from '../../../credentials/capability.js';
import type { Output } from '../../../terminal/output.js';
import { renderCredentialRotation } from '../../../ledger/client/render-ledger.js';
import { rotateLedgerCredential, type RotateCredentialResult } from '../../../ledger/client/ledger-credentials.js';

export default class LedgerCredentialsRotate extends LexecCommand<RotateCredentialResult> {
  static override summary = 'Replace a credential by a new capability of the same kind, agent and holder, written to a private file (admin token).';
  static override description =
    'The new capability is written to --credential-file (0600 in a 0700 directory; the file must not exist) before anything changes; then, in one ledger transaction, it is registered and the old credential revoked — at once, or after --grace-seconds during which both work. Run the same command again after a lost answer: it finds the rotation done. The capability is never printed.';
  static override examples = [
    '<%= config.bin %> <%= command.id %> cred_3f1c2b9e-8d4a-4f6e-9b2c-7a1d5e8f0c34 --credential-file /home/me/.lexec/credentials/agent-2.capability',
    '<%= config.bin %> <%= command.id %> cred_3f1c2b9e-8d4a-4f6e-9b2c-7a1d5e8f0c34 --credential-file /home/me/.lexec/credentials/agent-2.capability --grace-seconds 300 --json',
  ];
  static override args = { credential_id: Args.string({ required: true, description: 'The credential to replace (as `lexec ledger credentials list` shows it).' }) };
  static override flags = {
    ...ledgerTargetFlags,
    'credential-file': Flags.string({ required: true, summary: 'Absolute path where the new capability is written (must not exist).' }),
    'grace-seconds': Flags.string({
      summary: `How long the old capability keeps working, 0 to ${MAX_ROTATION_GRACE_SECONDS} s (a day); default 0: refused at once.`,
    }),
  };

  protected override async execute(): Promise<RotateCredentialResult> {
    const { args, flags } = await this.parse(LedgerCredentialsRotate);
    return rotateLedgerCredential({
      target: ledgerTarget(flags),
      credentialId: credentialIdArgument(args.credential_id),
      credentialFile: flags['credential-file'],
      graceSeconds: flags['grace-seconds'] === undefined ? 0 : wholeNumberFlag(flags['grace-seconds'], '--grace-seconds', 0, MAX_ROTATION_GRACE_SECONDS),
    });
  }

  protected override renderHuman(result: RotateCredentialResult, output: Output): void {
    renderCredentialRotation(result, output);
  }
}
