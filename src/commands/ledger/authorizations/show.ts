import { Args } from '@oclif/core';
import { tokenIdArgument } from '../../../cli/flag-values.js';
import { LexecCommand } from '../../../cli/lexec-command.js';
import { ledgerTarget, ledgerTargetFlags } from '../../../cli/ledger-flags.js';
import type { Output } from '../../../terminal/output.js';
import { renderAuthorization } from '../../../ledger/client/render-ledger.js';
import { showLedgerAuthorization, type AuthorizationResult } from '../../../ledger/client/ledger-authorizations.js';

export default class LedgerAuthorizationsShow extends LexecCommand<AuthorizationResult> {
  static override summary = 'Show one spend authorization (admin, approver, or the owning agent token).';
  static override examples = [
    '<%= config.bin %> <%= command.id %> 0b7e6c1a-2f4d-4c8e-9a51-3d2f8e7c6b10',
    '<%= config.bin %> <%= command.id %> 0b7e6c1a-2f4d-4c8e-9a51-3d2f8e7c6b10 --url http://127.0.0.1:7400 --token-file /home/me/.lexec/credentials/approver.capability',
  ];
  static override args = { token_id: Args.string({ required: true, description: 'Token id of the spend authorization (a UUID).' }) };
  static override flags = { ...ledgerTargetFlags };

  protected override async execute(): Promise<AuthorizationResult> {
    const { args, flags } = await this.parse(LedgerAuthorizationsShow);
    return showLedgerAuthorization({ target: ledgerTarget(flags), tokenId: tokenIdArgument(args.token_id) });
  }

  protected override renderHuman(result: AuthorizationResult, output: Output): void {
    renderAuthorization(result.authorization, output);
  }
}
