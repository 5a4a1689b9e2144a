import { Flags } from '@oclif/core';
import { LexecCommand } from '../../../cli/lexec-command.js';
import type { Output } from '../../../terminal/output.js';
import { EXECUTOR_CREDENTIAL_KINDS } from '../../../executor/domain/credential-standing.js';
import { listExecutorCredentials, type ExecutorCredentialList } from '../../../executor/credentials/list-executor-credentials.js';
import { renderExecutorCredentialList } from '../../../executor/credentials/render-executor-credentials.js';

export default class ExecutorCredentialsList extends LexecCommand<ExecutorCredentialList> {
  static override summary = "List the executor's caller and reconciliation credentials: id, kind, created, last used, status.";
  static override description =
    "Reads the executor's own database (storage.database_path of --config) as its owner; the executor may be running. Never shows a capability or its digest. Last use is recorded at most once a minute. Details: docs/credentials.md \"The executor's credential table\".";
  static override examples = ['<%= config.bin %> <%= command.id %> --config /var/lib/lexec/executor.json', '<%= config.bin %> <%= command.id %> --config /var/lib/lexec/executor.json --kind caller --json'];
  static override flags = {
    config: Flags.string({ required: true, summary: 'Absolute path of the executor configuration.' }),
    kind: Flags.option({ options: EXECUTOR_CREDENTIAL_KINDS, summary: 'Only credentials of this kind.' })(),
  };

  protected override async execute(): Promise<ExecutorCredentialList> {
    const { flags } = await this.parse(ExecutorCredentialsList);
    return listExecutorCredentials({ target: { configPath: flags.config }, ...(flags.kind === undefined ? {} : { kind: flags.kind }) });
  }

  protected override renderHuman(result: ExecutorCredentialList, output: Output): void {
    renderExecutorCredentialList(result, output);
  }
}
