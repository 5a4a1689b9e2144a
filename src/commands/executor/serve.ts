import { Flags } from '@oclif/core';
import { LexecCommand } from '../../cli/lexec-command.js';
import type { Output } from '../../terminal/output.js';
import type { ExecutorStopped } from '../../executor/serve-executor.js';

export default class ExecutorServe extends LexecCommand<ExecutorStopped> {
  static override summary = 'Run the executor service. Start the ledger service first.';
  static override description =
    'Listens on the configured loopback address with its own SQLite database and artifact store until SIGINT or SIGTERM. It admits executions once the ledger is proven compatible (pinned version, contract, lineage, protected probe). Logs are JSON lines on stderr.';
  static override examples = ['<%= config.bin %> <%= command.id %> --config /var/lib/lexec/executor.json'];
  static override flags = {
    config: Flags.string({ required: true, summary: 'Absolute path of the executor configuration file.' }),
  };

  protected override async execute(): Promise<ExecutorStopped> {
    const { flags } = await this.parse(ExecutorServe);
    const { serveExecutor } = await import('../../executor/serve-executor.js');
    return serveExecutor(flags.config);
  }

  protected override renderHuman(result: ExecutorStopped, output: Output): void {
    output.line(`executor stopped (${result.signal})`);
  }
}
