import { readCaFile } from '../http/tls-trust.js';
import { lstat, unlink } from 'node:fs/promises';
import { isAbsolute } from 'node:path';
import { capabilityDigest, capabilityKind, generateCapability, type CredentialKind } from '../credentials/capability.js';
import { ensurePrivateDirectory, readPrivateFile } from '../credentials/private-file.js';
import { errorCode, UsageError, UserError } from '../errors.js';
import { LEDGER_CREDENTIAL_ID, managedCredentialPaths } from './managed-credentials.js';
import { createLedgerClient, type LedgerClient } from '../ledger/client/ledger-client.js';
import { writeNewFile } from '../storage/write-new-file.js';
import { loadExecutorConfig } from './config/validate-executor-config.js';

/*
 * `executor credentials bootstrap-managed` (spec §1 process commands, §5.4; docs/credentials.md).
 * Order matters: everything that can be checked without changing anything — paths, the
 * configuration, the admin capability file, the state directory and any existing credential
 * file, the admin capability at the ledger — is checked first, so a refusal leaves every file
 * and the ledger as they were. No capability ever leaves this module except in the
 * Authorization header of a ledger request and in its own private file.
 */

export type BootstrapOutcome = 'created' | 'reused';

/** What the command reports: categories and locations only, never a capability. */
export interface BootstrapManagedResult {
  readonly caller_capability: BootstrapOutcome;
  readonly reconciliation_capability: BootstrapOutcome;
  readonly ledger_credential: BootstrapOutcome;
  readonly ledger_endpoint: string;
  readonly state_dir: string;
}

export interface BootstrapManagedRequest {
  /** Absolute path of the executor configuration (credentials.mode must be `managed`). */
  readonly configPath: string;
  /** Absolute path of the ledger's admin capability file (its admin_capability_path). */
  readonly adminCapabilityPath: string;
  /** Per ledger request; the client's default when absent. */
  readonly timeoutMs?: number;
}

function currentUid(): number | null {
  return typeof process.getuid === 'function' ? process.getuid() : null;
}

/**
 * The ledger base URL from the configuration. The schema already refuses plain http:// to a
 * host that is not loopback, so no capability is ever sent there in clear.
 */
function ledgerEndpoint(endpoint: string): string {
  const url = new URL(endpoint);
  return `${url.origin}${url.pathname}`.replace(/\/+$/, '');
}

/** Reads the ledger's admin capability descriptor-safely; a loose, linked or malformed file fails closed. */
async function readAdminCapability(path: string): Promise<string> {
  const token = await readPrivateFile(path, 'ledger admin capability');
  if (capabilityKind(token) !== 'admin') {
    throw new UserError('ledger_admin_capability_invalid', `The file ${path} does not hold a ledger admin capability (its content is not shown).`, {
      nextStep: "Pass --ledger-admin-capability the ledger's admin_capability_path: the file the ledger created on its first start.",
    });
  }
  return token;
}

/** Whether the state directory exists; if it does it must already be private (it is never tightened: someone may have read it). */
async function inspectStateDirectory(dir: string): Promise<boolean> {
  let info;
  try {
    info = await lstat(dir);
  } catch (error) {
    if (errorCode(error) === 'ENOENT') return false;
    throw new UserError('credential_directory_not_private', `The credential directory ${dir} cannot be inspected (${errorCode(error) ?? 'error'}).`, {
      nextStep: 'Check credentials.state_dir and the permissions of its parent directories.',
    });
  }
  const uid = currentUid();
  if (!info.isDirectory() || (uid !== null && info.uid !== uid) || (info.mode & 0o077) !== 0) {
    throw new UserError('credential_directory_not_private', `The credential directory ${dir} is not private (it must be a directory, not a link, owned by this user, mode 0700).`, {
      nextStep: `Check that nobody else read it, then fix it (chmod 700 ${dir}); lexec never loosens or silently tightens it.`,
    });
  }
  return true;
}

/**
 * The capability in an existing credential file, or null when there is none. A file that is
 * there but unusable (a link, not private, malformed, of another kind) is a conflict: it is
 * never read past, replaced or repaired.
 */
async function existingCapability(path: string, kind: CredentialKind, conflictCode: string): Promise<string | null> {
  let token: string;
  try {
    token = await readPrivateFile(path, `${kind} capability`);
  } catch (error) {
    if (error instanceof UserError && error.code === 'secret_file_missing') return null;
    if (!(error instanceof UserError)) throw error;
    throw new UserError(conflictCode, `${error.message} lexec never overwrites a credential file.`, {
      nextStep: `Inspect ${path}: make it a regular file owned by this user with mode 0600 if it is the right credential, or move it away if it is not; then run the bootstrap again.`,
    });
  }
  if (capabilityKind(token) !== kind) {
    const article = kind === 'executor' ? 'an' : 'a';
    throw new UserError(conflictCode, `The file ${path} exists but does not hold ${article} ${kind} capability (its content is not shown); lexec never overwrites a credential file.`, {
      nextStep: `Move ${path} away after checking what it is, then run the bootstrap again to create a new one.`,
    });
  }
  return token;
}

/** Creates the state directory 0700 if needed (an existing one was checked by inspectStateDirectory). */
async function createStateDirectory(dir: string): Promise<void> {
  try {
    await ensurePrivateDirectory(dir);
  } catch (error) {
    if (error instanceof UserError) throw error;
    throw new UserError('credential_file_unwritable', `The credential directory ${dir} cannot be created (${errorCode(error) ?? 'error'}).`, {
      nextStep: 'Check that credentials.state_dir can be created by this user.',
    });
  }
}

/** Writes a new capability file exclusively (0600; never replaces one). */
async function writeCapabilityFile(path: string, token: string, conflictCode: string): Promise<void> {
  let outcome;
  try {
    outcome = await writeNewFile(path, `${token}\n`, 0o600);
  } catch (error) {
    throw new UserError('credential_file_unwritable', `The credential file ${path} cannot be written (${errorCode(error) ?? 'error'}).`, {
      nextStep: 'Check that credentials.state_dir can be written by this user.',
    });
  }
  if (outcome === 'exists') {
    throw new UserError(conflictCode, `The credential file ${path} appeared while the bootstrap ran (another bootstrap at the same time?); it was left as it is.`, {
      nextStep: 'Make sure only one launcher manages this profile, then run the bootstrap again: it reuses the file.',
    });
  }
}

/** Ledger refusals in the terms of this command: the endpoint comes from the configuration, not from --url. */
function inBootstrapTerms(error: unknown, configPath: string, presented: 'admin' | 'executor', tokenFile: string): unknown {
  if (!(error instanceof UserError)) return error;
  const where = `ledger.endpoint in ${configPath}`;
  if (error.code === 'ledger_unreachable') {
    return new UserError('ledger_unreachable', error.message, { nextStep: `Start the ledger first (the launcher starts it before the bootstrap) and check that ${where} is its base URL.` });
  }
  if (error.code === 'ledger_bad_response') {
    return new UserError('ledger_bad_response', error.message, { nextStep: `Check that ${where} names the lexec ledger and that the ledger and executor versions match.` });
  }
  if (error.code === 'ledger_unauthorized') {
    const code = presented === 'admin' ? 'ledger_capability_rejected' : 'ledger_credential_rejected';
    return new UserError(code, `The ledger refused the ${presented} capability in ${tokenFile}: it is not registered at the ledger that ${where} names.`, {
      nextStep:
        presented === 'admin'
          ? 'Pass --ledger-admin-capability the admin_capability_path of the ledger running at the configured endpoint.'
          : 'Run the bootstrap again; if this repeats, the endpoint may not lead to the ledger that registered the credential.',
    });
  }
  return error;
}

/**
 * Registers the executor→ledger credential under its fixed id. An existing file is
 * re-registered (unchanged ⇒ reused; created ⇒ the ledger lost it, e.g. after a restore); an
 * absent one is generated and written before it is sent. A 409 means the id is held by another
 * capability: nothing is overwritten, and a file written by this run is removed again.
 */
async function registerLedgerCredential(
  admin: LedgerClient,
  path: string,
  existing: string | null,
  request: BootstrapManagedRequest,
): Promise<{ token: string; outcome: BootstrapOutcome }> {
  const token = existing ?? generateCapability('executor');
  if (existing === null) await writeCapabilityFile(path, token, 'ledger_credential_conflict');
  try {
    const registered = await admin.registerCredential(LEDGER_CREDENTIAL_ID, { kind: 'executor', agentId: null, digestSha256: capabilityDigest(token).toString('hex') });
    return { token, outcome: existing === null || registered.outcome === 'created' ? 'created' : 'reused' };
  } catch (error) {
    if (!(error instanceof UserError && error.code === 'ledger_conflict')) {
      // Kept on any other failure: the registration may have succeeded with its answer lost,
      // and the next run re-registers the same digest (unchanged) instead of conflicting.
      throw inBootstrapTerms(error, request.configPath, 'admin', request.adminCapabilityPath);
    }
    if (existing === null) await unlink(path).catch(() => undefined);
    throw new UserError(
      'ledger_credential_conflict',
      existing === null
        ? `The ledger at ${admin.url} already holds another executor credential under "${LEDGER_CREDENTIAL_ID}"; the new ${path} was removed again.`
        : `The ledger at ${admin.url} holds a different executor credential under "${LEDGER_CREDENTIAL_ID}" than ${path}; the file was left as it is.`,
      {
        nextStep:
          'This state directory and this ledger do not belong together. Restore the ledger database and credentials.state_dir from the same backup, or point ledger.endpoint and credentials.state_dir at the pair that belongs together.',
      },
    );
  }
}

/**
 * Creates or reuses the managed executor's caller capability and executor→ledger credential.
 * Idempotent: a second run changes nothing and reports `reused` twice.
 */
export async function bootstrapManagedCredentials(request: BootstrapManagedRequest): Promise<BootstrapManagedResult> {
  const { configPath, adminCapabilityPath } = request;
  if (!isAbsolute(adminCapabilityPath)) {
    throw new UsageError('ledger_admin_capability_not_absolute', 'The --ledger-admin-capability path must be absolute; got a relative path.', {
      nextStep: "Pass the full path of the ledger's admin capability file (its admin_capability_path).",
    });
  }
  const config = await loadExecutorConfig(configPath);
  if (config.credentials.mode !== 'managed') {
    throw new UserError('credentials_not_managed', `The configuration ${configPath} has credentials.mode "${config.credentials.mode}"; only a managed executor is bootstrapped.`, {
      nextStep: 'Use credentials {"mode":"managed","state_dir":"/abs/dir"} for a launcher-managed executor; an explicit one names its credentials itself.',
      issues: [{ path: 'credentials.mode', message: 'must be "managed" for credentials bootstrap-managed' }],
    });
  }
  const stateDir = config.credentials.state_dir;
  const url = ledgerEndpoint(config.ledger.endpoint);
  const adminToken = await readAdminCapability(adminCapabilityPath);

  const paths = managedCredentialPaths(stateDir);
  const stateDirExists = await inspectStateDirectory(stateDir);
  const callerToken = stateDirExists ? await existingCapability(paths.caller, 'caller', 'caller_capability_conflict') : null;
  const ledgerToken = stateDirExists ? await existingCapability(paths.ledger, 'executor', 'ledger_credential_conflict') : null;
  const reconciliationToken = stateDirExists ? await existingCapability(paths.reconciliation, 'reconciliation', 'reconciliation_capability_conflict') : null;

  const caCertificate = config.ledger.ca_file === undefined ? undefined : await readCaFile(config.ledger.ca_file, 'ledger.ca_file');
  const client = (token: string) =>
    createLedgerClient({ url, token, ...(request.timeoutMs === undefined ? {} : { timeoutMs: request.timeoutMs }), ...(caCertificate === undefined ? {} : { caCertificate }) });
  const admin = client(adminToken);
  try {
    await admin.listAgents();
  } catch (error) {
    throw inBootstrapTerms(error, configPath, 'admin', adminCapabilityPath);
  }

  // Every check passed; from here on things change. The ledger credential goes first: its 409
  // is the only refusal left, and it then finds the caller capability untouched as well.
  await createStateDirectory(stateDir);
  const ledger = await registerLedgerCredential(admin, paths.ledger, ledgerToken, request);
  try {
    await client(ledger.token).listAgents();
  } catch (error) {
    throw inBootstrapTerms(error, configPath, 'executor', paths.ledger);
  }

  if (callerToken === null) await writeCapabilityFile(paths.caller, generateCapability('caller'), 'caller_capability_conflict');
  if (reconciliationToken === null) {
    await writeCapabilityFile(paths.reconciliation, generateCapability('reconciliation'), 'reconciliation_capability_conflict');
  }
  return {
    caller_capability: callerToken === null ? 'created' : 'reused',
    reconciliation_capability: reconciliationToken === null ? 'created' : 'reused',
    ledger_credential: ledger.outcome,
    ledger_endpoint: url,
    state_dir: stateDir,
  };
}
