import { Flags } from '@oclif/core';
import { LexecCommand } from '../../../cli/lexec-command.js';
import type { Output } from '../../../terminal/output.js';
import { bootstrapManagedCredentials, type BootstrapManagedResult } from '../../../executor/bootstrap-managed-credentials.js';
import { renderBootstrapManagedCredentials } from '../../../executor/render-bootstrap-managed-credentials.js';

export default class ExecutorCredentialsBootstrapManaged extends LexecCommand<BootstrapManagedResult> {
  // Launcher-internal (spec §1): run by `stack start` after the ledger is ready. Documented in
  // docs/credentials.md, hidden from help so operators are not invited to run it by hand.
  static override hidden = true;
  static override summary = "Create or reuse a managed executor's caller capability and executor→ledger credential (launcher-internal).";
  static override description =
    "Reads the ledger's admin capability from a private file, proves it against the ledger named in the configuration, then creates or reuses the capabilities in credentials.state_dir and registers the executor's digest at the ledger. Idempotent; conflicts fail closed; output is categorical and never contains a capability.";
  static override examples = [
    '<%= config.bin %> <%= command.id %> --config /var/lib/lexec/executor.json --ledger-admin-capability /var/lib/lexec/ledger-credentials/admin.capability --json',
  ];
  static override flags = {
    config: Flags.string({ required: true, summary: 'Absolute path of the executor configuration (credentials.mode "managed").' }),
    'ledger-admin-capability': Flags.string({
      required: true,
      summary: "Absolute path of the ledger's admin capability file (private, 0600).",
    }),
  };

  protected override async execute(): Promise<BootstrapManagedResult> {
    const { flags } = await this.parse(ExecutorCredentialsBootstrapManaged);
    return bootstrapManagedCredentials({ configPath: flags.config, adminCapabilityPath: flags['ledger-admin-capability'] });
  }

  protected override renderHuman(result: BootstrapManagedResult, output: Output): void {
    renderBootstrapManagedCredentials(result, output);
  }
}
