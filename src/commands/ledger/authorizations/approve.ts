import { Args, Flags } from '@oclif/core';
import { tokenIdArgument } from '../../../cli/flag-values.js';
import { LexecCommand } from '../../../cli/lexec-command.js';
import { deciderFlags, deciderTarget, ledgerTargetFlags } from '../../../cli/ledger-flags.js';
import type { Output } from '../../../terminal/output.js';
import { renderAuthorization } from '../../../ledger/client/render-ledger.js';
import { decideLedgerAuthorization, type AuthorizationResult } from '../../../ledger/client/ledger-authorizations.js';

export default class LedgerAuthorizationsApprove extends LexecCommand<AuthorizationResult> {
  static override summary = 'Approve a requested spend authorization (approver token).';
  static override description = 'Only a requested authorization can be decided; deciding it the same way again changes nothing, the opposite way is a conflict.';
  static override examples = [
    '<%= config.bin %> <%= command.id %> 0b7e6c1a-2f4d-4c8e-9a51-3d2f8e7c6b10 --profile sandbox',
    '<%= config.bin %> <%= command.id %> 0b7e6c1a-2f4d-4c8e-9a51-3d2f8e7c6b10 --as "Ada Lovelace" --reason "launch poster"',
    '<%= config.bin %> <%= command.id %> 0b7e6c1a-2f4d-4c8e-9a51-3d2f8e7c6b10 --reason "within budget" --url http://127.0.0.1:7400 --token-file /home/me/.lexec/credentials/approver.capability',
  ];
  static override args = { token_id: Args.string({ required: true, description: 'Token id of the spend authorization (a UUID).' }) };
  static override flags = {
    ...ledgerTargetFlags,
    ...deciderFlags,
    reason: Flags.string({ summary: 'Why (at most 500 characters; kept by the ledger).' }),
  };

  protected override async execute(): Promise<AuthorizationResult> {
    const { args, flags } = await this.parse(LedgerAuthorizationsApprove);
    return decideLedgerAuthorization({ target: deciderTarget(flags), tokenId: tokenIdArgument(args.token_id), decision: 'approve', reason: flags.reason });
  }

  protected override renderHuman(result: AuthorizationResult, output: Output): void {
    renderAuthorization(result.authorization, output);
  }
}
