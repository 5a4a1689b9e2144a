import { Args, Flags } from '@oclif/core';
import { executorCredentialIdArgument } from '../../../cli/flag-values.js';
import { LexecCommand } from '../../../cli/lexec-command.js';
import type { Output } from '../../../terminal/output.js';
import { revokeExecutorCredential, type RevokeExecutorCredentialResult } from '../../../executor/credentials/revoke-executor-credential.js';
import { renderExecutorCredentialRevocation } from '../../../executor/credentials/render-executor-credentials.js';

export default class ExecutorCredentialsRevoke extends LexecCommand<RevokeExecutorCredentialResult> {
  static override summary = 'Revoke one of the executor\'s caller or reconciliation credentials: refused (401) from its next request.';
  static override description =
    'Writes the revocation to the executor\'s own database; a running executor reads it on every request, so there is no cache to wait out. Revoking a revoked credential changes nothing (changed: false). An executor whose configured capability is revoked does not start again until it is rotated. Details: docs/credentials.md.';
  static override examples = ['<%= config.bin %> <%= command.id %> caller-0f3a9c1e5b7d2468 --config /var/lib/lexec/executor.json'];
  static override args = { credential_id: Args.string({ required: true, description: 'The credential to revoke (caller-… or reconciliation-…, as `executor credentials list` shows).' }) };
  static override flags = {
    config: Flags.string({ required: true, summary: 'Absolute path of the executor configuration.' }),
  };

  protected override async execute(): Promise<RevokeExecutorCredentialResult> {
    const { args, flags } = await this.parse(ExecutorCredentialsRevoke);
    return revokeExecutorCredential({ target: { configPath: flags.config }, credentialId: executorCredentialIdArgument(args.credential_id) });
  }

  protected override renderHuman(result: RevokeExecutorCredentialResult, output: Output): void {
    renderExecutorCredentialRevocation(result, output);
  }
}
