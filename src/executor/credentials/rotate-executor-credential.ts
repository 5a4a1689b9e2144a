import { join } from 'node:path';
import { z } from 'zod';
import { capabilityDigest, digestLookup, digestsEqual, generateCapability, MAX_ROTATION_GRACE_SECONDS } from '../../credentials/capability.js';
import { readPrivateFile, writePrivateFile } from '../../credentials/private-file.js';
import { errorCode, UserError } from '../../errors.js';
import { acquireProcessLock } from '../../storage/process-lock.js';
import { loadExecutorConfig } from '../config/validate-executor-config.js';
import { executorCredentialId, ROTATABLE_EXECUTOR_CREDENTIAL_KINDS, type ExecutorCredentialKind } from '../domain/credential-standing.js';
import { managedCredentialPaths } from '../managed-credentials.js';
import type { CredentialRecord, CredentialStore } from '../store/credential-store.js';
import { parseCredentialRequest, storedView, withCredentialStore, type ExecutorCredentialView } from './executor-credential-database.js';
import { replacementNextStep } from './register-configured-credentials.js';

export interface RotateExecutorCredentialRequest {
  /** Absolute path of a managed executor's configuration. */
  readonly configPath: string;
  readonly role: ExecutorCredentialKind;
  /** How long the replaced capability stays accepted: 0 (refused at once) to 86400. */
  readonly graceSeconds: number;
}

/** What `lexec executor credentials rotate` reports: ids and times, never a capability. */
export interface RotateExecutorCredentialResult {
  readonly database_path: string;
  readonly role: ExecutorCredentialKind;
  /** The managed file that now holds the new capability. */
  readonly credential_file: string;
  readonly grace_seconds: number;
  /** The new credential. */
  readonly credential: ExecutorCredentialView;
  /** The credential the file held before, now expiring (or revoked with no grace); null when the table did not hold it. */
  readonly previous: ExecutorCredentialView | null;
}

const rotateRequest = z.object({
  configPath: z.string(),
  role: z.enum(ROTATABLE_EXECUTOR_CREDENTIAL_KINDS),
  graceSeconds: z.number().int('must be whole seconds').min(0, 'must be at least 0').max(MAX_ROTATION_GRACE_SECONDS, `must be at most ${MAX_ROTATION_GRACE_SECONDS}`),
});

/** The row of the capability the managed file holds now, if the table has it as this role's. */
function previousRecord(store: CredentialStore, role: ExecutorCredentialKind, token: string): CredentialRecord | null {
  const digest = capabilityDigest(token);
  const row = store.byLookup(digestLookup(digest));
  return row !== undefined && row.kind === role && digestsEqual(row.digest, digest) ? row : null;
}

/** The capability the managed file holds now (checked private); a missing file means no bootstrap ran. */
async function currentCapability(file: string, role: ExecutorCredentialKind, stateDir: string): Promise<string> {
  try {
    return await readPrivateFile(file, `${role} capability`);
  } catch (error) {
    throw error instanceof UserError && error.code === 'secret_file_missing' ? managedCredentialsMissing(stateDir) : error;
  }
}

/** Step 1: a new capability, its digest registered (committed) before any file holds it. */
function registerNew(store: CredentialStore, role: ExecutorCredentialKind): { token: string; credentialId: string } {
  const token = generateCapability(role);
  const digest = capabilityDigest(token);
  const lookup = digestLookup(digest);
  const credentialId = executorCredentialId(role, lookup);
  store.transaction(() => {
    store.insert({ credentialId, kind: role, lookup, digest, at: Date.now() });
  });
  return { token, credentialId };
}

/** Step 2: the file replaced atomically; on failure the new credential is revoked again and the old one, still in the file, stays accepted. */
async function replaceFile(store: CredentialStore, file: string, fresh: { token: string; credentialId: string }, role: ExecutorCredentialKind, stateDir: string): Promise<void> {
  try {
    await writePrivateFile(file, `${fresh.token}\n`);
  } catch (error) {
    store.revoke(fresh.credentialId, Date.now());
    throw new UserError('credential_file_unwritable', `The credential file ${file} cannot be replaced (${error instanceof UserError ? error.code : (errorCode(error) ?? 'error')}); the ${role} capability in it was not changed.`, {
      nextStep: `Check that ${stateDir} is this user's private (0700) directory and that the file system is writable, then rotate again.`,
    });
  }
}

/** Step 3: the credential the file held ends: revoked now (no grace), or accepted until the grace is over. Its id, or null when the table did not hold it. */
function endPrevious(store: CredentialStore, role: ExecutorCredentialKind, previousToken: string, graceSeconds: number): string | null {
  return store.transaction(() => {
    const record = previousRecord(store, role, previousToken);
    if (record === null) return null;
    const now = Date.now();
    if (graceSeconds === 0) store.revoke(record.credentialId, now);
    else store.expire(record.credentialId, now + graceSeconds * 1000);
    return record.credentialId;
  });
}

/**
 * Replaces a managed executor's caller or reconciliation capability while it runs. In an order that
 * never leaves the file holding a capability the executor refuses: the new capability is
 * registered (committed) first, then written over the file atomically (0600 temporary file in the
 * same 0700 directory, fsync, rename, fsync of the directory), and only then is the old one given
 * the end of its grace (or revoked, with no grace). One rotation at a time per state directory.
 */
export async function rotateExecutorCredential(request: RotateExecutorCredentialRequest): Promise<RotateExecutorCredentialResult> {
  const { configPath, role, graceSeconds } = parseCredentialRequest(rotateRequest, request);
  const config = await loadExecutorConfig(configPath);
  if (config.credentials.mode !== 'managed') {
    throw new UserError('credentials_not_managed', `The configuration ${configPath} has credentials.mode "explicit": its capabilities are files the operator names, which lexec does not replace.`, {
      nextStep: replacementNextStep(config, role, configPath),
      issues: [{ path: 'credentials.mode', message: 'must be "managed" for credentials rotate' }],
    });
  }
  const stateDir = config.credentials.state_dir;
  const file = managedCredentialPaths(stateDir)[role];
  const databasePath = config.storage.database_path;
  const unlock = await lockRotation(stateDir);
  try {
    const current = await currentCapability(file, role, stateDir);
    return await withCredentialStore(databasePath, async (store) => {
      const fresh = registerNew(store, role);
      await replaceFile(store, file, fresh, role, stateDir);
      const previous = endPrevious(store, role, current, graceSeconds);
      const now = Date.now();
      return {
        database_path: databasePath,
        role,
        credential_file: file,
        grace_seconds: graceSeconds,
        credential: storedView(store, fresh.credentialId, now),
        previous: previous === null ? null : storedView(store, previous, now),
      };
    });
  } finally {
    await unlock();
  }
}

function managedCredentialsMissing(stateDir: string): UserError {
  return new UserError('managed_credentials_missing', `The managed credentials in ${stateDir} have not been created.`, {
    nextStep: 'Run `lexec executor credentials bootstrap-managed` (the launcher does this on start), then rotate.',
  });
}

/** One rotation at a time per state directory: two would each register a capability and only one file would keep its. */
async function lockRotation(stateDir: string): Promise<() => Promise<void>> {
  try {
    return await acquireProcessLock(
      join(stateDir, '.rotation.lock'),
      () =>
        new UserError('credential_rotation_in_progress', `Another rotation of the credentials in ${stateDir} is under way.`, {
          nextStep: 'Wait for it to finish, then list the credentials to see where it left them; rotate again if needed.',
        }),
    );
  } catch (error) {
    if (errorCode(error) === 'ENOENT') throw managedCredentialsMissing(stateDir);
    throw error;
  }
}

/**
 * The executor's part in rotating a capability it shares with the ledger — the stack's metrics
 * capability, registered at both (`lexec stack credentials rotate --role metrics`; docs/metrics.md).
 * The stack owns the file and the order: it registers the new capability here before the ledger
 * rotates and before the file holds it, withdraws it if the ledger refuses, and ends the previous
 * one here once the file holds the new. Each step takes the state directory's rotation lock.
 */
export interface SharedCredentialSteps {
  /** Registers `token` (committed; a token already registered as this kind answers its id). */
  register(token: string): Promise<string>;
  /** Revokes a credential `register` made, the rotation having failed before the file held it. */
  withdraw(credentialId: string): Promise<void>;
  /** Ends the credential `previousToken` is: accepted for the grace, or revoked with none; null when the table does not hold it. */
  endPrevious(previousToken: string, graceSeconds: number): Promise<ExecutorCredentialView | null>;
}

export async function sharedCredentialSteps(configPath: string, role: 'metrics'): Promise<SharedCredentialSteps> {
  const config = await loadExecutorConfig(configPath);
  if (config.credentials.mode !== 'managed') {
    throw new UserError('credentials_not_managed', `The configuration ${configPath} has credentials.mode "explicit": its ${role} capability is a file the operator names, which lexec does not replace.`, {
      nextStep: replacementNextStep(config, role, configPath),
      issues: [{ path: 'credentials.mode', message: `must be "managed" to rotate the ${role} capability` }],
    });
  }
  const stateDir = config.credentials.state_dir;
  const databasePath = config.storage.database_path;
  const locked = async <T>(work: (store: CredentialStore) => T): Promise<T> => {
    const unlock = await lockRotation(stateDir);
    try {
      return await withCredentialStore(databasePath, work);
    } finally {
      await unlock();
    }
  };
  return {
    register: (token) =>
      locked((store) =>
        store.transaction(() => {
          const digest = capabilityDigest(token);
          const lookup = digestLookup(digest);
          const row = store.byLookup(lookup);
          if (row === undefined) {
            const credentialId = executorCredentialId(role, lookup);
            store.insert({ credentialId, kind: role, lookup, digest, at: Date.now() });
            return credentialId;
          }
          if (row.kind !== role || !digestsEqual(row.digest, digest)) {
            throw new UserError('configured_credentials_not_distinct', `The new ${role} capability is registered at the executor as ${row.credentialId} (${row.kind}); nothing was changed.`, {
              nextStep: 'Run the rotation again: it makes another capability.',
            });
          }
          return row.credentialId;
        }),
      ),
    withdraw: (credentialId) =>
      locked((store) => {
        store.revoke(credentialId, Date.now());
      }),
    endPrevious: (previousToken, graceSeconds) =>
      locked((store) => {
        const previous = endPrevious(store, role, previousToken, graceSeconds);
        return previous === null ? null : storedView(store, previous, Date.now());
      }),
  };
}
