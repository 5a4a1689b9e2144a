import type { ExecutorConfig } from './config/executor-config-schema.js';
import type { SecretReference } from '../config/schema-parts.js';
import { readPrivateFile } from '../credentials/private-file.js';
import { UserError } from '../errors.js';
import { managedCredentialPaths } from './managed-credentials.js';

export interface ExecutorCredentials {
  /** Capability callers must present. */
  readonly caller: string;
  /** The executor's capability at the ledger. */
  readonly ledger: string;
  /** Capability of the reconciliation route; without one the route admits nobody. */
  readonly reconciliation: string | null;
}

/** Reads a secret named by coordinates. Only private files are supported in this release. */
export async function readSecret(reference: SecretReference, what: string): Promise<string> {
  if (reference.store === 'file') return readPrivateFile(reference.path, what);
  throw new UserError('secret_store_unavailable', `The ${what} is configured in the OS keychain, which this release cannot read.`, {
    nextStep: 'Reference it as {"store":"file","path":…} with a 0600 file, or use managed credentials.',
  });
}

/** Loads the executor's caller and ledger credentials from managed state or explicit coordinates. */
export async function loadExecutorCredentials(config: ExecutorConfig): Promise<ExecutorCredentials> {
  const { credentials } = config;
  if (credentials.mode === 'explicit') {
    return {
      caller: await readSecret(credentials.caller, 'caller capability'),
      ledger: await readSecret(credentials.ledger, 'ledger credential'),
      reconciliation: credentials.reconciliation === undefined ? null : await readSecret(credentials.reconciliation, 'reconciliation capability'),
    };
  }
  const paths = managedCredentialPaths(credentials.state_dir);
  try {
    return {
      caller: await readPrivateFile(paths.caller, 'caller capability'),
      ledger: await readPrivateFile(paths.ledger, 'ledger credential'),
      reconciliation: await readPrivateFile(paths.reconciliation, 'reconciliation capability'),
    };
  } catch (error) {
    if (error instanceof UserError && error.code === 'secret_file_missing') {
      throw new UserError('managed_credentials_missing', `The managed credentials in ${credentials.state_dir} have not been created.`, {
        nextStep: 'Run `lexec executor credentials bootstrap-managed` (the launcher does this on start).',
      });
    }
    throw error;
  }
}
