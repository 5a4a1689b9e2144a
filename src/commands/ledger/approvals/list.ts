import { LexecCommand } from '../../../cli/lexec-command.js';
import { ledgerTarget, ledgerTargetFlags } from '../../../cli/ledger-flags.js';
import type { Output } from '../../../terminal/output.js';
import { renderApprovalList } from '../../../ledger/client/render-ledger.js';
import { listLedgerApprovals, type AuthorizationListResult } from '../../../ledger/client/ledger-authorizations.js';

export default class LedgerApprovalsList extends LexecCommand<AuthorizationListResult> {
  static override summary = 'List the spend requests waiting for an approver, oldest first (approver token).';
  static override description =
    'What `GET /approvals` answers: requested authorizations above their agent\'s approval threshold that have not expired. Decide one with `lexec ledger authorizations approve|deny <token_id>`.';
  static override examples = [
    '<%= config.bin %> <%= command.id %> --profile sandbox',
    '<%= config.bin %> <%= command.id %> --url http://127.0.0.1:7400 --token-file /home/me/.lexec/credentials/approver.capability --json',
  ];
  static override flags = { ...ledgerTargetFlags };

  protected override async execute(): Promise<AuthorizationListResult> {
    const { flags } = await this.parse(LedgerApprovalsList);
    return listLedgerApprovals({ target: ledgerTarget(flags) });
  }

  protected override renderHuman(result: AuthorizationListResult, output: Output): void {
    renderApprovalList(result, output);
  }
}
