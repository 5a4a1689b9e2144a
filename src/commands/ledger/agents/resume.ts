import { Flags } from '@oclif/core';
import { agentIdFlag } from '../../../cli/flag-values.js';
import { LexecCommand } from '../../../cli/lexec-command.js';
import { ledgerTarget, ledgerTargetFlags } from '../../../cli/ledger-flags.js';
import type { Output } from '../../../terminal/output.js';
import { renderAgentSuspension } from '../../../ledger/client/render-ledger.js';
import { resumeLedgerAgent, type AgentSuspensionResult } from '../../../ledger/client/ledger-agents.js';

export default class LedgerAgentsResume extends LexecCommand<AgentSuspensionResult> {
  static override summary = 'Resume a suspended agent: it may request spend again (admin token).';
  static override description =
    'Authorizations the suspension cancelled stay cancelled; the agent requests new ones. Resuming an active agent changes nothing.';
  static override examples = [
    '<%= config.bin %> <%= command.id %> --agent-id agt_0b7e6c1a-2f4d-4c8e-9a51-3d2f8e7c6b10',
    '<%= config.bin %> <%= command.id %> --agent-id agt_0b7e6c1a-2f4d-4c8e-9a51-3d2f8e7c6b10 --profile live --json',
  ];
  static override flags = {
    ...ledgerTargetFlags,
    'agent-id': Flags.string({ required: true, summary: 'The agent to resume (agt_…, as `lexec ledger agents list` shows).' }),
  };

  protected override async execute(): Promise<AgentSuspensionResult> {
    const { flags } = await this.parse(LedgerAgentsResume);
    return resumeLedgerAgent({ target: ledgerTarget(flags), agentId: agentIdFlag(flags['agent-id']) });
  }

  protected override renderHuman(result: AgentSuspensionResult, output: Output): void {
    renderAgentSuspension(result, output);
  }
}
