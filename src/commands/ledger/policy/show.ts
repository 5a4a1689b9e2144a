import { Flags } from '@oclif/core';
import { LexecCommand } from '../../../cli/lexec-command.js';
import { agentChoice, ledgerTarget, ledgerTargetFlags } from '../../../cli/ledger-flags.js';
import type { Output } from '../../../terminal/output.js';
import { renderPolicyShown } from '../../../ledger/client/render-ledger.js';
import { showLedgerPolicy, type PolicyShowResult } from '../../../ledger/client/ledger-policy.js';

export default class LedgerPolicyShow extends LexecCommand<PolicyShowResult> {
  static override summary = "Show an agent's spend policy, optionally exporting it as a policy file (admin token).";
  static override description =
    'With --export, the policy is also written as a policy file: plain JSON in the shape `lexec ledger policy set` reads, never with colour or other terminal sequences. An existing file is not replaced.';
  static override examples = [
    '<%= config.bin %> <%= command.id %> --agent-id agt_… --export "$PWD/image-bot.policy.json"',
    '<%= config.bin %> <%= command.id %> --agent-id agt_… --export "$PWD/image-bot.policy.json" --url http://127.0.0.1:7400 --token-file /var/lib/lexec/ledger-credentials/admin.capability',
  ];
  static override flags = {
    ...ledgerTargetFlags,
    'agent-id': Flags.string({ summary: "The agent whose policy to show: its id or its name (default: the profile's own agent; required with --url)." }),
    export: Flags.string({ summary: 'Also write the policy to this new file (absolute path).' }),
  };

  protected override async execute(): Promise<PolicyShowResult> {
    const { flags } = await this.parse(LedgerPolicyShow);
    return showLedgerPolicy({ target: ledgerTarget(flags), agent: agentChoice(flags), exportTo: flags.export ?? null });
  }

  protected override renderHuman(result: PolicyShowResult, output: Output): void {
    renderPolicyShown(result, output);
  }
}
