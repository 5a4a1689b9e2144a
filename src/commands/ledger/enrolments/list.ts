import { LexecCommand } from '../../../cli/lexec-command.js';
import { ledgerTarget, ledgerTargetFlags } from '../../../cli/ledger-flags.js';
import type { Output } from '../../../terminal/output.js';
import { listEnrolments, type EnrolmentListResult } from '../../../ledger/client/ledger-enrolments.js';
import { renderEnrolments } from '../../../ledger/client/render-enrolments.js';

export default class LedgerEnrolmentsList extends LexecCommand<EnrolmentListResult> {
  static override summary = 'List the executor-host enrolments: host, agent, status (open, redeemed, revoked, expired) and the credentials issued (admin token).';
  static override description = 'Never shows a token.';
  static override examples = ['<%= config.bin %> <%= command.id %>', '<%= config.bin %> <%= command.id %> --json'];
  static override flags = { ...ledgerTargetFlags };

  protected override async execute(): Promise<EnrolmentListResult> {
    const { flags } = await this.parse(LedgerEnrolmentsList);
    return listEnrolments({ target: ledgerTarget(flags) });
  }

  protected override renderHuman(result: EnrolmentListResult, output: Output): void {
    renderEnrolments(result, output);
  }
}
