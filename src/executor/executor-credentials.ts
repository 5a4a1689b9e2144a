import type { ExecutorConfig } from './config/executor-config-schema.js';
import type { SecretReference } from '../config/schema-parts.js';
import { capabilityKind } from '../credentials/capability.js';
import { followPrivateFile, type FollowedFileChange, type FollowedPrivateFile } from '../credentials/followed-private-file.js';
import { readPrivateFile, readPrivateFileIfPresent } from '../credentials/private-file.js';
import { UserError } from '../errors.js';
import { managedCredentialPaths } from './managed-credentials.js';

export interface ExecutorCredentials {
  /** Capability callers must present; registered in the credential table at start, never kept beyond. */
  readonly caller: string;
  /**
   * The executor's capability at the ledger: a fixed one (tests), or its file followed while the
   * executor runs, so a rotation that replaces the file is taken up at the next ledger call.
   */
  readonly ledger: string | FollowedPrivateFile;
  /** Capability of the reconciliation route; without one the route admits nobody. */
  readonly reconciliation: string | null;
  /** Capability of `GET /metrics`; without one the executor has no metrics route. */
  readonly metrics?: string | null;
}

export interface LoadExecutorCredentialsOptions {
  /** Told when the ledger credential's file changed: taken up, or refused (the previous one stays in use). */
  readonly onLedgerCredentialChange?: (change: FollowedFileChange) => void;
}

/** Reads a secret named by coordinates. Only private files are supported in this release. */
export async function readSecret(reference: SecretReference, what: string): Promise<string> {
  if (reference.store === 'file') return readPrivateFile(reference.path, what);
  throw keychainUnavailable(what);
}

function keychainUnavailable(what: string): UserError {
  return new UserError('secret_store_unavailable', `The ${what} is configured in the OS keychain, which this release cannot read.`, {
    nextStep: 'Reference it as {"store":"file","path":…} with a 0600 file, or use managed credentials.',
  });
}

/** Loads the executor's credential from `path` at start and follows the file afterwards (only an executor capability replaces it). */
function followLedgerCredential(path: string, options: LoadExecutorCredentialsOptions): Promise<FollowedPrivateFile> {
  return followPrivateFile(path, 'ledger credential', {
    accept: (content) => capabilityKind(content) === 'executor',
    ...(options.onLedgerCredentialChange === undefined ? {} : { onChange: options.onLedgerCredentialChange }),
  });
}

/** Loads the executor's caller and ledger credentials from managed state or explicit coordinates. */
export async function loadExecutorCredentials(config: ExecutorConfig, options: LoadExecutorCredentialsOptions = {}): Promise<ExecutorCredentials> {
  const { credentials } = config;
  if (credentials.mode === 'explicit') {
    const caller = await readSecret(credentials.caller, 'caller capability');
    if (credentials.ledger.store !== 'file') throw keychainUnavailable('ledger credential');
    return {
      caller,
      ledger: await followLedgerCredential(credentials.ledger.path, options),
      reconciliation: credentials.reconciliation === undefined ? null : await readSecret(credentials.reconciliation, 'reconciliation capability'),
      metrics: credentials.metrics === undefined ? null : await readSecret(credentials.metrics, 'metrics capability'),
    };
  }
  const paths = managedCredentialPaths(credentials.state_dir);
  try {
    return {
      caller: await readPrivateFile(paths.caller, 'caller capability'),
      ledger: await followLedgerCredential(paths.ledger, options),
      reconciliation: await readPrivateFile(paths.reconciliation, 'reconciliation capability'),
      // Optional: a managed executor without the file (one bootstrapped outside a stack) has no metrics route.
      metrics: await readPrivateFileIfPresent(paths.metrics, 'metrics capability'),
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
