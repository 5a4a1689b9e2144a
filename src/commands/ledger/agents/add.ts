import { Flags } from '@oclif/core';
import { LexecCommand } from '../../../cli/lexec-command.js';
import { ledgerTarget, ledgerTargetFlags } from '../../../cli/ledger-flags.js';
import type { Output } from '../../../terminal/output.js';
import { renderAgentAdded } from '../../../ledger/client/render-ledger.js';
import { addLedgerAgent, type AddAgentResult } from '../../../ledger/client/ledger-agents.js';

export default class LedgerAgentsAdd extends LexecCommand<AddAgentResult> {
  static override summary = 'Add an agent to the ledger, optionally issuing its capability into a private file (admin token).';
  static override description =
    "The agent starts with the ledger's default spend policy. With --credential-file, lexec generates the agent's capability, writes it to that file (0600 in a 0700 directory; an existing file is never replaced) and registers only its SHA-256 digest. The capability is never printed.";
  static override examples = [
    '<%= config.bin %> <%= command.id %> --name image-bot --credential-file /home/me/.lexec/credentials/image-bot.capability',
    '<%= config.bin %> <%= command.id %> --url http://127.0.0.1:7400 --token-file /var/lib/lexec/ledger-credentials/admin.capability --name image-bot --credential-file /home/me/.lexec/credentials/image-bot.capability',
  ];
  static override flags = {
    ...ledgerTargetFlags,
    name: Flags.string({ required: true, summary: 'Agent name: 1-64 lower-case letters, digits, _ or -.' }),
    'credential-file': Flags.string({ summary: "Absolute path where the agent's new capability is written (must not exist)." }),
  };

  protected override async execute(): Promise<AddAgentResult> {
    const { flags } = await this.parse(LedgerAgentsAdd);
    return addLedgerAgent({ target: ledgerTarget(flags), name: flags.name, credentialFile: flags['credential-file'] ?? null });
  }

  protected override renderHuman(result: AddAgentResult, output: Output): void {
    renderAgentAdded(result, output);
  }
}
