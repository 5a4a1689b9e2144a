import { Flags } from '@oclif/core';
import { agentIdFlag } from '../../../cli/flag-values.js';
import { LexecCommand } from '../../../cli/lexec-command.js';
import { ledgerTarget, ledgerTargetFlags } from '../../../cli/ledger-flags.js';
import type { Output } from '../../../terminal/output.js';
import { renderCredential } from '../../../ledger/client/render-ledger.js';
import { createLedgerCredential, type CreateCredentialResult } from '../../../ledger/client/ledger-credentials.js';

export default class LedgerCredentialsCreate extends LexecCommand<CreateCredentialResult> {
  static override summary = 'Issue a new capability into a private file and register its digest at the ledger (admin token).';
  static override description =
    'lexec generates a random 256-bit capability of the given kind, writes it to --credential-file (0600 in a 0700 directory) and registers only its SHA-256 digest. An existing file is never replaced. The capability is never printed.';
  static override examples = [
    '<%= config.bin %> <%= command.id %> --kind approver --holder-name "Ada Lovelace" --credential-file /home/me/.lexec/credentials/ada.capability',
    '<%= config.bin %> <%= command.id %> --url http://127.0.0.1:7400 --token-file /var/lib/lexec/ledger-credentials/admin.capability --kind approver --credential-file /home/me/.lexec/credentials/approver.capability',
  ];
  static override flags = {
    ...ledgerTargetFlags,
    kind: Flags.option({ options: ['approver', 'executor', 'reconciliation', 'agent', 'metrics'] as const, required: true, summary: 'Kind of capability to issue.' })(),
    'agent-id': Flags.string({ summary: 'The agent an agent capability belongs to (required with --kind agent, refused otherwise).' }),
    'credential-file': Flags.string({ required: true, summary: 'Absolute path where the new capability is written (must not exist).' }),
    'holder-name': Flags.string({ summary: 'The person the credential belongs to, e.g. "Ada Lovelace" (a named approver): shown with every decision it makes.' }),
  };

  protected override async execute(): Promise<CreateCredentialResult> {
    const { flags } = await this.parse(LedgerCredentialsCreate);
    const agentId = flags['agent-id'] === undefined ? null : agentIdFlag(flags['agent-id']);
    return createLedgerCredential({ target: ledgerTarget(flags), kind: flags.kind, agentId, credentialFile: flags['credential-file'], holderName: flags['holder-name'] ?? null });
  }

  protected override renderHuman(result: CreateCredentialResult, output: Output): void {
    renderCredential(result.credential, output);
  }
}
