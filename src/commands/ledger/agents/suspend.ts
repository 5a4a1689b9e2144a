import { Flags } from '@oclif/core';
import { agentIdFlag } from '../../../cli/flag-values.js';
import { LexecCommand } from '../../../cli/lexec-command.js';
import { ledgerTarget, ledgerTargetFlags } from '../../../cli/ledger-flags.js';
import type { Output } from '../../../terminal/output.js';
import { renderAgentSuspension } from '../../../ledger/client/render-ledger.js';
import { suspendLedgerAgent, type AgentSuspensionResult } from '../../../ledger/client/ledger-agents.js';

export default class LedgerAgentsSuspend extends LexecCommand<AgentSuspensionResult> {
  static override summary = "Suspend an agent: refuse its new spend requests and cancel its unclaimed authorizations (admin token).";
  static override description =
    'In one ledger transaction: from then on the agent\'s spend requests are refused (agent_suspended), and its requested and approved authorizations that no execution has claimed are cancelled, their holds freed. Executions already under way finish, settle or park as usual. Suspending a suspended agent changes nothing (cancelled_authorizations 0). Undo with `lexec ledger agents resume`.';
  static override examples = [
    '<%= config.bin %> <%= command.id %> --agent-id agt_0b7e6c1a-2f4d-4c8e-9a51-3d2f8e7c6b10 --reason "runaway loop"',
    '<%= config.bin %> <%= command.id %> --agent-id agt_0b7e6c1a-2f4d-4c8e-9a51-3d2f8e7c6b10 --url http://127.0.0.1:7400 --token-file /var/lib/lexec/ledger-credentials/admin.capability --json',
  ];
  static override flags = {
    ...ledgerTargetFlags,
    'agent-id': Flags.string({ required: true, summary: 'The agent to suspend (agt_…, as `lexec ledger agents list` shows).' }),
    reason: Flags.string({ summary: 'Why (at most 500 characters; kept with the suspension).' }),
  };

  protected override async execute(): Promise<AgentSuspensionResult> {
    const { flags } = await this.parse(LedgerAgentsSuspend);
    return suspendLedgerAgent({ target: ledgerTarget(flags), agentId: agentIdFlag(flags['agent-id']), reason: flags.reason ?? null });
  }

  protected override renderHuman(result: AgentSuspensionResult, output: Output): void {
    renderAgentSuspension(result, output);
  }
}
