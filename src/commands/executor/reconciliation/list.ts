import { LexecCommand } from '../../../cli/lexec-command.js';
import type { Output } from '../../../terminal/output.js';
import { profileFlags } from '../../../cli/profile-flags.js';
import { reconciliationConnector } from '../../../stack-client/connect-executor.js';
import { renderReconciliationList } from '../../../executor/client/render-reconciliation.js';
import { listReconciliations, type ReconciliationList } from '../../../executor/client/executor-reconciliation.js';

export default class ExecutorReconciliationList extends LexecCommand<ReconciliationList> {
  static override summary = 'List the executions awaiting a human because their billing was ambiguous, with the evidence.';
  static override description =
    "Uses the running stack's reconciliation capability (through its handoff). Each entry shows why it is parked, the authorization it holds and what the provider attempts recorded; resolve one with `lexec executor reconciliation resolve`. Details: docs/executions.md \"Resolving a reconciliation\".";
  static override examples = ['<%= config.bin %> <%= command.id %>', '<%= config.bin %> <%= command.id %> --profile sandbox --json'];
  static override flags = { ...profileFlags };

  protected override async execute(): Promise<ReconciliationList> {
    const { flags } = await this.parse(ExecutorReconciliationList);
    return listReconciliations({ connect: reconciliationConnector(process.env, flags.profile) });
  }

  protected override renderHuman(result: ReconciliationList, output: Output): void {
    renderReconciliationList(result, output);
  }
}
