import { Args } from '@oclif/core';
import { credentialIdArgument } from '../../../cli/flag-values.js';
import { LexecCommand } from '../../../cli/lexec-command.js';
import { ledgerTarget, ledgerTargetFlags } from '../../../cli/ledger-flags.js';
import type { Output } from '../../../terminal/output.js';
import { renderCredentialRevocation } from '../../../ledger/client/render-ledger.js';
import { revokeLedgerCredential } from '../../../ledger/client/ledger-credentials.js';
import type { LedgerCredentialRevocation } from '../../../ledger/wire/answers.js';

export default class LedgerCredentialsRevoke extends LexecCommand<LedgerCredentialRevocation> {
  static override summary = 'Revoke a credential: the ledger refuses its capability from the next request on (admin token).';
  static override description =
    'Nothing caches a credential, so the very next request with it is refused (401). Revoking a revoked credential changes nothing (changed: false). The last admin credential is never revoked (last_admin_credential): rotate it instead.';
  static override examples = ['<%= config.bin %> <%= command.id %> cred_3f1c2b9e-8d4a-4f6e-9b2c-7a1d5e8f0c34', '<%= config.bin %> <%= command.id %> lexec-local-agent-5f0c9a7e1b2d3c4f --json'];
  static override args = { credential_id: Args.string({ required: true, description: 'The credential to revoke (as `lexec ledger credentials list` shows it).' }) };
  static override flags = { ...ledgerTargetFlags };

  protected override async execute(): Promise<LedgerCredentialRevocation> {
    const { args, flags } = await this.parse(LedgerCredentialsRevoke);
    return revokeLedgerCredential({ target: ledgerTarget(flags), credentialId: credentialIdArgument(args.credential_id) });
  }

  protected override renderHuman(result: LedgerCredentialRevocation, output: Output): void {
    renderCredentialRevocation(result, output);
  }
}
