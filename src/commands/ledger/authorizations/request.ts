import { Flags } from '@oclif/core';
import { amountUnitsFlag } from '../../../cli/flag-values.js';
import { LexecCommand } from '../../../cli/lexec-command.js';
import { ledgerTarget, ledgerTargetFlags } from '../../../cli/ledger-flags.js';
import type { Output } from '../../../terminal/output.js';
import { renderAuthorization } from '../../../ledger/client/render-ledger.js';
import { requestLedgerAuthorization, type AuthorizationResult } from '../../../ledger/client/ledger-authorizations.js';

export default class LedgerAuthorizationsRequest extends LexecCommand<AuthorizationResult> {
  static override summary = 'Request a spend authorization for the agent whose token is presented (agent token).';
  static override description =
    "Amounts are exact micro-units of USD (units_scale 6): 1 USD = 1000000. The agent's spend policy approves it at once up to the approval threshold, leaves it for an approver above it, and refuses it above a cap.";
  static override examples = [
    '<%= config.bin %> <%= command.id %> --amount-units 2500000 --purpose "poster draft"',
    '<%= config.bin %> <%= command.id %> --url http://127.0.0.1:7400 --token-file /home/me/.lexec/credentials/image-bot.capability --amount-units 2500000 --purpose "poster draft"',
  ];
  static override flags = {
    ...ledgerTargetFlags,
    'amount-units': Flags.string({ required: true, summary: 'Amount in micro-units of USD (digits only; 1 USD = 1000000).' }),
    purpose: Flags.string({ summary: 'What the money is for (at most 200 characters; shown to approvers).' }),
  };

  protected override async execute(): Promise<AuthorizationResult> {
    const { flags } = await this.parse(LedgerAuthorizationsRequest);
    const amountUnits = amountUnitsFlag(flags['amount-units']);
    return requestLedgerAuthorization({ target: ledgerTarget(flags), amountUnits, purpose: flags.purpose });
  }

  protected override renderHuman(result: AuthorizationResult, output: Output): void {
    renderAuthorization(result.authorization, output);
  }
}
