import { Flags } from '@oclif/core';
import { readBuildInfo, type BuildInfo } from '../../build-info.js';
import { LexecCommand } from '../../cli/lexec-command.js';
import type { Output } from '../../terminal/output.js';
import { UsageError } from '../../errors.js';
import type { LedgerStopped } from '../../ledger/serve-ledger.js';
import { renderLedgerServe } from '../../ledger/render-serve.js';

type Result = LedgerStopped | BuildInfo;

export default class LedgerServe extends LexecCommand<Result> {
  static override summary = 'Run the ledger service: spend authorizations, approvals, settlement and reconciliation.';
  static override description =
    'Listens on the configured loopback address with its own SQLite database until SIGINT or SIGTERM. Logs are JSON lines on stderr. With --version it prints the exact product version, contract version and commit, and starts nothing.';
  static override examples = ['<%= config.bin %> <%= command.id %> --config /var/lib/lexec/ledger.json', '<%= config.bin %> <%= command.id %> --version --json'];
  static override flags = {
    config: Flags.string({ summary: 'Absolute path of the ledger configuration file.' }),
    version: Flags.boolean({ summary: 'Print the version this ledger binary reports and exit.', default: false }),
  };

  protected override async execute(): Promise<Result> {
    const { flags } = await this.parse(LedgerServe);
    if (flags.version) return readBuildInfo();
    if (flags.config === undefined) {
      throw new UsageError('usage_error', 'Missing required flag --config.', { nextStep: 'Pass --config <absolute path of the ledger configuration>.' });
    }
    const { serveLedger } = await import('../../ledger/serve-ledger.js');
    return serveLedger(flags.config);
  }

  protected override renderHuman(result: Result, output: Output): void {
    renderLedgerServe(result, output);
  }
}
