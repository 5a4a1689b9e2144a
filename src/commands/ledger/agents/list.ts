import { LexecCommand } from '../../../cli/lexec-command.js';
import { ledgerTarget, ledgerTargetFlags } from '../../../cli/ledger-flags.js';
import type { Output } from '../../../terminal/output.js';
import { renderAgentList } from '../../../ledger/client/render-ledger.js';
import { listLedgerAgents, type ListAgentsResult } from '../../../ledger/client/ledger-agents.js';

export default class LedgerAgentsList extends LexecCommand<ListAgentsResult> {
  static override summary = "List the ledger's agents (admin token).";
  static override examples = [
    '<%= config.bin %> <%= command.id %> --json',
    '<%= config.bin %> <%= command.id %> --profile live',
    '<%= config.bin %> <%= command.id %> --url http://127.0.0.1:7400 --token-file /var/lib/lexec/ledger-credentials/admin.capability --json',
  ];
  static override flags = { ...ledgerTargetFlags };

  protected override async execute(): Promise<ListAgentsResult> {
    const { flags } = await this.parse(LedgerAgentsList);
    return listLedgerAgents(ledgerTarget(flags));
  }

  protected override renderHuman(result: ListAgentsResult, output: Output): void {
    renderAgentList(result, output);
  }
}
