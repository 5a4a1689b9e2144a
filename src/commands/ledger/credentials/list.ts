import { Flags } from '@oclif/core';
import { agentIdFlag } from '../../../cli/flag-values.js';
import { LexecCommand } from '../../../cli/lexec-command.js';
import { ledgerTarget, ledgerTargetFlags } from '../../../cli/ledger-flags.js';
import type { Output } from '../../../terminal/output.js';
import { renderCredentialList } from '../../../ledger/client/render-ledger.js';
import { listLedgerCredentials, type ListCredentialsResult } from '../../../ledger/client/ledger-credentials.js';

export default class LedgerCredentialsList extends LexecCommand<ListCredentialsResult> {
  static override summary = 'List the credentials the ledger accepts or accepted: id, kind, agent, holder, status, created and last used (admin token).';
  static override description = 'Never shows a capability. Status is active, expiring (a rotation\'s grace runs until expires_at) or revoked. Last use is kept to the minute.';
  static override examples = ['<%= config.bin %> <%= command.id %>', '<%= config.bin %> <%= command.id %> --kind agent --json', '<%= config.bin %> <%= command.id %> --agent-id agt_0b7e6c1a-2f4d-4c8e-9a51-3d2f8e7c6b10'];
  static override flags = {
    ...ledgerTargetFlags,
    kind: Flags.option({ options: ['admin', 'agent', 'approver', 'executor', 'reconciliation', 'metrics'] as const, summary: 'Only credentials of this kind.' })(),
    'agent-id': Flags.string({ summary: 'Only the credentials of this agent (agt_…).' }),
  };

  protected override async execute(): Promise<ListCredentialsResult> {
    const { flags } = await this.parse(LedgerCredentialsList);
    const agentId = flags['agent-id'] === undefined ? undefined : agentIdFlag(flags['agent-id']);
    return listLedgerCredentials({ target: ledgerTarget(flags), kind: flags.kind, agentId });
  }

  protected override renderHuman(result: ListCredentialsResult, output: Output): void {
    renderCredentialList(result, output);
  }
}
