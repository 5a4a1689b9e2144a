import { z } from 'zod';
import { UserError } from '../../errors.js';
import { EXECUTOR_CREDENTIAL_ID } from '../domain/credential-standing.js';
import { executorDatabasePath, parseCredentialRequest, storedView, withCredentialStore, type ExecutorCredentialView, type ExecutorDatabaseTarget } from './executor-credential-database.js';

export interface RevokeExecutorCredentialRequest {
  readonly target: ExecutorDatabaseTarget;
  /** `caller-…` or `reconciliation-…`, as `executor credentials list` shows it. */
  readonly credentialId: string;
}

/** What `lexec executor credentials revoke` reports. `changed: false`: it was revoked already (at `credential.revoked_at`). */
export interface RevokeExecutorCredentialResult {
  readonly database_path: string;
  readonly changed: boolean;
  readonly credential: ExecutorCredentialView;
}

const revokeRequest = z.object({ credentialId: z.string().regex(EXECUTOR_CREDENTIAL_ID, 'must be a credential id (caller-… or reconciliation-… and 16 hex digits, as `executor credentials list` shows)') });

/**
 * Revokes one credential: the running executor refuses it from its next request (401), since it
 * reads the table on every request. Revoking a revoked credential changes nothing.
 */
export async function revokeExecutorCredential(request: RevokeExecutorCredentialRequest): Promise<RevokeExecutorCredentialResult> {
  const { credentialId } = parseCredentialRequest(revokeRequest, { credentialId: request.credentialId });
  const databasePath = await executorDatabasePath(request.target);
  return withCredentialStore(databasePath, (store) => {
    const now = Date.now();
    const changed = store.transaction(() => {
      if (store.byId(credentialId) === undefined) {
        throw new UserError('executor_credential_not_found', `The executor database ${databasePath} has no credential ${credentialId}.`, {
          nextStep: 'List the credentials with `lexec executor credentials list --config <executor configuration>` and pass one of their ids.',
        });
      }
      return store.revoke(credentialId, now);
    });
    return { database_path: databasePath, changed, credential: storedView(store, credentialId, now) };
  });
}
