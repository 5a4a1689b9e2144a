import { z } from 'zod';
import { EXECUTOR_CREDENTIAL_KINDS, type ExecutorCredentialKind } from '../domain/credential-standing.js';
import { credentialView, executorDatabasePath, parseCredentialRequest, withCredentialStore, type ExecutorCredentialView, type ExecutorDatabaseTarget } from './executor-credential-database.js';

export interface ListExecutorCredentialsRequest {
  readonly target: ExecutorDatabaseTarget;
  /** Only credentials of this kind; all when absent. */
  readonly kind?: ExecutorCredentialKind;
}

/** What `lexec executor credentials list` reports: every credential of the executor, oldest first. */
export interface ExecutorCredentialList {
  readonly database_path: string;
  readonly credentials: readonly ExecutorCredentialView[];
}

const listRequest = z.object({ kind: z.enum(EXECUTOR_CREDENTIAL_KINDS).optional() });

/** Lists the executor's caller and reconciliation credentials (never a capability). */
export async function listExecutorCredentials(request: ListExecutorCredentialsRequest): Promise<ExecutorCredentialList> {
  const { kind } = parseCredentialRequest(listRequest, { kind: request.kind });
  const databasePath = await executorDatabasePath(request.target);
  return withCredentialStore(databasePath, (store) => {
    const now = Date.now();
    return { database_path: databasePath, credentials: store.list(kind ?? null).map((record) => credentialView(record, now)) };
  });
}
