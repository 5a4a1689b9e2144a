import { z } from 'zod';
import { UserError } from '../../errors.js';
import { credentialStanding, EXECUTOR_CREDENTIAL_ID, isAccepted } from '../domain/credential-standing.js';
import { executorDatabasePath, parseCredentialRequest, storedView, withCredentialStore, type ExecutorCredentialView, type ExecutorDatabaseTarget } from './executor-credential-database.js';

export interface RevokeExecutorCredentialRequest {
  readonly target: ExecutorDatabaseTarget;
  /** `caller-…` or `reconciliation-…`, as `executor credentials list` shows it. */
  readonly credentialId: string;
}

/** What `lexec executor credentials revoke` reports. `changed: false`: it was refused already (since `credential.revoked_at`). */
export interface RevokeExecutorCredentialResult {
  readonly database_path: string;
  readonly changed: boolean;
  readonly credential: ExecutorCredentialView;
}

const revokeRequest = z.object({ credentialId: z.string().regex(EXECUTOR_CREDENTIAL_ID, 'must be a credential id (caller-… or reconciliation-… and 16 hex digits, as `executor credentials list` shows)') });

/**
 * Revokes one credential: the running executor refuses it from its next request (401), since it
 * reads the table on every request. Revoking a credential refused already (revoked, or past its
 * grace) changes nothing.
 */
export async function revokeExecutorCredential(request: RevokeExecutorCredentialRequest): Promise<RevokeExecutorCredentialResult> {
  const { credentialId } = parseCredentialRequest(revokeRequest, { credentialId: request.credentialId });
  const databasePath = await executorDatabasePath(request.target);
  return withCredentialStore(databasePath, (store) => {
    const now = Date.now();
    const changed = store.transaction(() => {
      const record = store.byId(credentialId);
      if (record === undefined) {
        throw new UserError('executor_credential_not_found', `The executor database ${databasePath} has no credential ${credentialId}.`, {
          nextStep: 'List the credentials with `lexec executor credentials list --config <executor configuration>` and pass one of their ids.',
        });
      }
      // Refused already (revoked, or its grace is over): nothing to change.
      return isAccepted(credentialStanding(record, now)) && store.revoke(credentialId, now);
    });
    return { database_path: databasePath, changed, credential: storedView(store, credentialId, now) };
  });
}
