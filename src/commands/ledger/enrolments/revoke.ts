import { Args } from '@oclif/core';
import { LexecCommand } from '../../../cli/lexec-command.js';
import { ledgerTarget, ledgerTargetFlags } from '../../../cli/ledger-flags.js';
import type { Output } from '../../../terminal/output.js';
import { revokeEnrolment, type EnrolmentRevokeResult } from '../../../ledger/client/ledger-enrolments.js';
import { renderEnrolmentRevoked } from '../../../ledger/client/render-enrolments.js';

export default class LedgerEnrolmentsRevoke extends LexecCommand<EnrolmentRevokeResult> {
  static override summary = 'Revoke an open enrolment token: it is refused from now on (admin token).';
  static override description =
    'A redeemed, expired or revoked enrolment is left as it is (changed: false). The credentials a redeemed token gave a host are revoked with `lexec ledger credentials revoke` (`lexec ledger enrolments list` names them).';
  static override examples = ['<%= config.bin %> <%= command.id %> enr_3f1c2b9e-8d4a-4f6e-9b2c-7a1d5e8f0c34'];
  static override args = { enrolment_id: Args.string({ required: true, description: 'The enrolment to revoke (as `lexec ledger enrolments list` shows it).' }) };
  static override flags = { ...ledgerTargetFlags };

  protected override async execute(): Promise<EnrolmentRevokeResult> {
    const { args, flags } = await this.parse(LedgerEnrolmentsRevoke);
    return revokeEnrolment({ target: ledgerTarget(flags), enrolmentId: args.enrolment_id });
  }

  protected override renderHuman(result: EnrolmentRevokeResult, output: Output): void {
    renderEnrolmentRevoked(result, output);
  }
}
