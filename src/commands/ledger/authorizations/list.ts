import { Flags } from '@oclif/core';
import { agentIdFlag, wholeNumberFlag } from '../../../cli/flag-values.js';
import { LexecCommand } from '../../../cli/lexec-command.js';
import { ledgerTarget, ledgerTargetFlags } from '../../../cli/ledger-flags.js';
import type { Output } from '../../../terminal/output.js';
import { renderAuthorizationList } from '../../../ledger/client/render-ledger.js';
import { AUTHORIZATION_STATUSES } from '../../../ledger/authorization-rules.js';
import { listLedgerAuthorizations, type AuthorizationListResult } from '../../../ledger/client/ledger-authorizations.js';

export default class LedgerAuthorizationsList extends LexecCommand<AuthorizationListResult> {
  static override summary = 'List spend authorizations, newest first (admin token).';
  static override examples = [
    '<%= config.bin %> <%= command.id %> --status requested',
    '<%= config.bin %> <%= command.id %> --url http://127.0.0.1:7400 --token-file /var/lib/lexec/ledger-credentials/admin.capability --status requested',
  ];
  static override flags = {
    ...ledgerTargetFlags,
    'agent-id': Flags.string({ summary: "Only this agent's authorizations." }),
    status: Flags.option({ options: AUTHORIZATION_STATUSES, summary: 'Only authorizations in this status.' })(),
    limit: Flags.string({ summary: 'At most this many (1-500; the ledger defaults to 100).' }),
  };

  protected override async execute(): Promise<AuthorizationListResult> {
    const { flags } = await this.parse(LedgerAuthorizationsList);
    return listLedgerAuthorizations({
      target: ledgerTarget(flags),
      agentId: flags['agent-id'] === undefined ? undefined : agentIdFlag(flags['agent-id']),
      status: flags.status,
      limit: flags.limit === undefined ? undefined : wholeNumberFlag(flags.limit, '--limit', 1, 500),
    });
  }

  protected override renderHuman(result: AuthorizationListResult, output: Output): void {
    renderAuthorizationList(result, output);
  }
}
