import { Flags } from '@oclif/core';
import { amountUnitsFlag, idempotencyKeyFlag } from '../../../cli/flag-values.js';
import { LexecCommand } from '../../../cli/lexec-command.js';
import { ledgerTarget, ledgerTargetFlags } from '../../../cli/ledger-flags.js';
import type { Output } from '../../../terminal/output.js';
import { renderAuthorizationRequest } from '../../../ledger/client/render-ledger.js';
import { requestLedgerAuthorization, type AuthorizationRequestResult } from '../../../ledger/client/ledger-authorizations.js';

export default class LedgerAuthorizationsRequest extends LexecCommand<AuthorizationRequestResult> {
  static override summary = 'Request a spend authorization for the agent whose token is presented (agent token).';
  static override description =
    "Amounts are exact micro-units of USD (units_scale 6): 1 USD = 1000000. The agent's spend policy approves it at once up to the approval threshold, leaves it for an approver above it, and refuses it above a cap. With --idempotency-key, repeating the same request while the authorization it opened is still open (requested, or approved and unclaimed) answers that one instead of opening another.";
  static override examples = [
    '<%= config.bin %> <%= command.id %> --amount-units 2500000 --purpose "poster draft"',
    '<%= config.bin %> <%= command.id %> --amount-units 2500000 --purpose "poster draft" --idempotency-key poster-draft-1',
    '<%= config.bin %> <%= command.id %> --url http://127.0.0.1:7400 --token-file /home/me/.lexec/credentials/image-bot.capability --amount-units 2500000 --purpose "poster draft"',
  ];
  static override flags = {
    ...ledgerTargetFlags,
    'amount-units': Flags.string({ required: true, summary: 'Amount in micro-units of USD (digits only; 1 USD = 1000000).' }),
    purpose: Flags.string({ summary: 'What the money is for (at most 200 characters; shown to approvers).' }),
    'idempotency-key': Flags.string({
      summary: 'Sent as Idempotency-Key (1-255 printable ASCII characters): while the authorization it opened is open, the same request answers that one.',
    }),
  };

  protected override async execute(): Promise<AuthorizationRequestResult> {
    const { flags } = await this.parse(LedgerAuthorizationsRequest);
    const amountUnits = amountUnitsFlag(flags['amount-units']);
    const key = flags['idempotency-key'] === undefined ? undefined : idempotencyKeyFlag(flags['idempotency-key']);
    return requestLedgerAuthorization({ target: ledgerTarget(flags), amountUnits, purpose: flags.purpose, idempotencyKey: key });
  }

  protected override renderHuman(result: AuthorizationRequestResult, output: Output): void {
    renderAuthorizationRequest(result, output);
  }
}
