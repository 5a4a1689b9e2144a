import type { Output } from '../../terminal/output.js';
import { table } from '../../terminal/table.js';
import type { ExecutorCredentialView } from './executor-credential-database.js';
import type { ExecutorCredentialList } from './list-executor-credentials.js';
import type { RevokeExecutorCredentialResult } from './revoke-executor-credential.js';
import type { RotateExecutorCredentialResult } from './rotate-executor-credential.js';

/* Human forms of `lexec executor credentials list|revoke|rotate`: ids, kinds and times; never a capability. */

function standing(output: Output, credential: ExecutorCredentialView): string {
  switch (credential.status) {
    case 'active':
      return output.style.ok('active');
    case 'expiring':
      return output.style.warn(`expiring ${credential.expires_at ?? ''}`);
    case 'revoked':
      return output.style.error(`revoked ${credential.revoked_at ?? ''}`);
  }
}

export function renderExecutorCredentialList(result: ExecutorCredentialList, output: Output): void {
  if (result.credentials.length === 0) {
    output.line(`No credentials in ${result.database_path} (the executor registers its configured ones when it starts).`);
    return;
  }
  const rows = [
    ['ID', 'KIND', 'CREATED', 'LAST USED', 'STATUS'],
    ...result.credentials.map((credential) => [credential.credential_id, credential.kind, credential.created_at, credential.last_used_at ?? 'never', standing(output, credential)]),
  ];
  for (const line of table(rows)) output.line(line);
}

export function renderExecutorCredentialRevocation(result: RevokeExecutorCredentialResult, output: Output): void {
  const { credential } = result;
  if (!result.changed) {
    output.line(`${credential.credential_id} (${credential.kind}) was already revoked at ${credential.revoked_at ?? '?'}; nothing changed.`);
    return;
  }
  output.line(`${output.style.ok('✔')} ${credential.credential_id} (${credential.kind}) revoked at ${credential.revoked_at ?? '?'}.`);
  output.line('  The executor refuses it from its next request (401), running or not.');
}

export function renderExecutorCredentialRotation(result: RotateExecutorCredentialResult, output: Output): void {
  output.line(`${output.style.ok('✔')} new ${result.role} capability ${result.credential.credential_id} in ${result.credential_file}`);
  const { previous } = result;
  if (previous === null) output.line('  The capability the file held before was not registered at the executor: nothing else to end.');
  else if (previous.status === 'expiring') output.line(`  ${previous.credential_id} stays accepted until ${previous.expires_at ?? '?'} (grace ${result.grace_seconds} s), then is refused.`);
  else output.line(`  ${previous.credential_id} revoked at ${previous.revoked_at ?? '?'}: refused from its next request.`);
  output.line(output.style.dim('  Clients that read the file again use the new capability; hand it to any that keep their own copy.'));
}
