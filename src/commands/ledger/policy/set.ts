import { Flags } from '@oclif/core';
import { versionFlag } from '../../../cli/flag-values.js';
import { LexecCommand } from '../../../cli/lexec-command.js';
import { agentChoice, ledgerTarget, ledgerTargetFlags } from '../../../cli/ledger-flags.js';
import type { Output } from '../../../terminal/output.js';
import { renderPolicySet } from '../../../ledger/client/render-ledger.js';
import { setLedgerPolicy, type PolicySetResult } from '../../../ledger/client/ledger-policy.js';

export default class LedgerPolicySet extends LexecCommand<PolicySetResult> {
  static override summary = "Replace an agent's spend policy with the one in a policy file (admin token).";
  static override description =
    'The file is validated first and every problem is listed with its field path; nothing is sent until it is valid. Create one with `lexec ledger policy init` or `lexec ledger policy show --export`. With --expect-version (the version `lexec ledger policy show` showed), the policy is replaced only if nobody changed it since; otherwise nothing changes and the error names the current version.';
  static override examples = [
    '<%= config.bin %> <%= command.id %> --agent-id agt_… --file "$PWD/image-bot.policy.json"',
    '<%= config.bin %> <%= command.id %> --agent-id agt_… --file "$PWD/image-bot.policy.json" --expect-version 3',
    '<%= config.bin %> <%= command.id %> --agent-id agt_… --file "$PWD/image-bot.policy.json" --url http://127.0.0.1:7400 --token-file /var/lib/lexec/ledger-credentials/admin.capability',
  ];
  static override flags = {
    ...ledgerTargetFlags,
    'agent-id': Flags.string({ summary: "The agent whose policy to replace: its id or its name (default: the profile's own agent; required with --url)." }),
    file: Flags.string({ required: true, summary: 'Absolute path of the policy file (JSON).' }),
    'expect-version': Flags.string({ summary: 'Replace it only if the policy is still at this version (as `ledger policy show` shows it); default: whatever the version.' }),
  };

  protected override async execute(): Promise<PolicySetResult> {
    const { flags } = await this.parse(LedgerPolicySet);
    const expectVersion = flags['expect-version'] === undefined ? null : versionFlag(flags['expect-version'], '--expect-version');
    return setLedgerPolicy({ target: ledgerTarget(flags), agent: agentChoice(flags), file: flags.file, expectVersion });
  }

  protected override renderHuman(result: PolicySetResult, output: Output): void {
    renderPolicySet(result, output);
  }
}
