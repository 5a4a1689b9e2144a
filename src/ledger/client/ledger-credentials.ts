import { randomUUID } from 'node:crypto';
import { access, unlink } from 'node:fs/promises';
import { dirname, isAbsolute } from 'node:path';
import { capabilityDigest, capabilityKind, generateCapability, type CredentialKind } from '../../credentials/capability.js';
import { ensurePrivateDirectory, readPrivateFile } from '../../credentials/private-file.js';
import { errorCode, UsageError, UserError } from '../../errors.js';
import { createLedgerClient, type IssuableCredentialKind, type LedgerClient } from './ledger-client.js';
import { answerMayBeLost } from './ledger-client-errors.js';
import type { LedgerCredential, LedgerCredentialRevocation, LedgerCredentialRotation } from '../wire/answers.js';
import { writeNewFile } from '../../storage/write-new-file.js';
import type { LedgerConnector } from './ledger-connector.js';

/** A credential this CLI generated, wrote and registered. Never holds the capability itself. */
export interface IssuedCredential {
  readonly credential_id: string;
  readonly kind: IssuableCredentialKind;
  readonly agent_id: string | null;
  /** The person it belongs to (a named approver), or null. */
  readonly holder_name: string | null;
  readonly credential_file: string;
  readonly outcome: 'created' | 'unchanged';
}

/** A capability already written to its private file but not yet registered at the ledger. */
export interface PendingCredential<K extends Exclude<CredentialKind, 'caller'> = IssuableCredentialKind> {
  readonly kind: K;
  readonly file: string;
  readonly digestSha256: string;
}

/**
 * Generates a capability of `kind` and writes it to `file` (0600, in a 0700 directory), before
 * anything is sent to the ledger: every local failure — relative path, existing file, loose
 * directory — happens while nothing has changed anywhere. An existing file is never replaced:
 * it may be the only copy of a credential in use.
 */
export async function writePendingCredential<K extends Exclude<CredentialKind, 'caller'>>(file: string, kind: K): Promise<PendingCredential<K>> {
  if (!isAbsolute(file)) {
    throw new UsageError('credential_file_not_absolute', 'The --credential-file path must be absolute; got a relative path.', {
      nextStep: 'Pass the full path where the new capability should be written, for example --credential-file "$PWD/credentials/agent.capability".',
    });
  }
  const token = generateCapability(kind);
  let outcome;
  try {
    await ensurePrivateDirectory(dirname(file));
    outcome = await writeNewFile(file, `${token}\n`, 0o600);
  } catch (error) {
    if (error instanceof UserError) throw error;
    throw new UserError('credential_file_unwritable', `The credential file ${file} cannot be written (${errorCode(error) ?? 'error'}).`, {
      nextStep: 'Check that its directory can be created and written by this user.',
    });
  }
  if (outcome === 'exists') {
    throw new UserError('credential_file_exists', `The credential file ${file} already exists; lexec never overwrites a credential file.`, {
      nextStep: 'Choose a new path, or remove the old file first if you are sure nothing uses that credential.',
    });
  }
  return { kind, file, digestSha256: capabilityDigest(token).toString('hex') };
}

/**
 * Registers a pending credential's digest. If the ledger refuses or cannot be reached, the file
 * is removed: an unregistered capability is useless, and a registered one whose registration
 * answer was lost is harmless without its secret. Either way the operator can simply retry.
 */
export async function registerPendingCredential(
  client: LedgerClient,
  pending: PendingCredential,
  agentId: string | null,
  holderName: string | null = null,
): Promise<IssuedCredential> {
  const credentialId = `cred_${randomUUID()}`;
  try {
    const registered = await client.registerCredential(credentialId, { kind: pending.kind, agentId, digestSha256: pending.digestSha256, holderName });
    return { credential_id: credentialId, kind: pending.kind, agent_id: agentId, holder_name: holderName, credential_file: pending.file, outcome: registered.outcome };
  } catch (error) {
    await discardPendingCredential(pending);
    throw error;
  }
}

export async function discardPendingCredential(pending: { readonly file: string }): Promise<void> {
  await unlink(pending.file).catch(() => undefined);
}

export interface CreateCredentialRequest {
  readonly target: LedgerConnector;
  readonly kind: IssuableCredentialKind;
  readonly agentId: string | null;
  readonly credentialFile: string;
  /** The person the credential belongs to (a named approver); null: none. */
  readonly holderName: string | null;
}

export interface CreateCredentialResult {
  readonly credential: IssuedCredential;
}

/** `ledger credentials create`: generate, write privately, register the digest (admin token). */
export async function createLedgerCredential(request: CreateCredentialRequest): Promise<CreateCredentialResult> {
  if ((request.kind === 'agent') !== (request.agentId !== null)) {
    throw new UsageError('usage_error', request.kind === 'agent' ? '--kind agent needs --agent-id.' : '--agent-id is allowed only with --kind agent.', {
      nextStep: 'An agent credential belongs to one agent (--agent-id agt_…); approver, executor and reconciliation credentials belong to none.',
    });
  }
  const client = await request.target('admin');
  const pending = await writePendingCredential(request.credentialFile, request.kind);
  return { credential: await registerPendingCredential(client, pending, request.agentId, request.holderName) };
}

export interface ListCredentialsRequest {
  readonly target: LedgerConnector;
  readonly kind: CredentialKind | undefined;
  readonly agentId: string | undefined;
}

export interface ListCredentialsResult {
  readonly credentials: readonly LedgerCredential[];
}

/** `ledger credentials list`: every credential with its status and last use (admin token); never a capability. */
export async function listLedgerCredentials(request: ListCredentialsRequest): Promise<ListCredentialsResult> {
  const client = await request.target('admin');
  return { credentials: await client.listCredentials({ kind: request.kind, agentId: request.agentId }) };
}

/** `ledger credentials revoke`: refused from its next request on; a repeat changes nothing (`changed: false`). */
export async function revokeLedgerCredential(request: { target: LedgerConnector; credentialId: string }): Promise<LedgerCredentialRevocation> {
  const client = await request.target('admin');
  return client.revokeCredential(request.credentialId);
}

export interface RotateCredentialRequest {
  readonly target: LedgerConnector;
  readonly credentialId: string;
  readonly credentialFile: string;
  readonly graceSeconds: number;
}

export interface RotateCredentialResult extends LedgerCredentialRotation {
  readonly credential_file: string;
}

const LEDGER_KINDS = ['admin', 'agent', 'approver', 'executor', 'reconciliation', 'metrics'] as const;

async function exists(path: string): Promise<boolean> {
  return access(path).then(
    () => true,
    () => false,
  );
}

/**
 * A rotation whose answer was lost is finished already when `file` holds the capability of a
 * credential the ledger accepts as rotated from `credentialId`: asking again is then a replay,
 * never a second rotation (which would leave the first new capability registered and unused).
 */
async function finishedRotation(url: string, file: string, credentialId: string): Promise<LedgerCredential | null> {
  const token = await readPrivateFile(file, 'credential').catch(() => null);
  if (token === null || capabilityKind(token) === null) return null;
  const self = await createLedgerClient({ url, token })
    .selfCredential()
    .catch(() => null);
  return self !== null && self.rotated_from === credentialId ? self : null;
}

/**
 * `ledger credentials rotate`: a new capability of the credential's kind is written to `file`
 * (0600) before anything changes at the ledger, then the ledger replaces the old credential with
 * it in one transaction (the old one works `graceSeconds` more). A refusal removes the file; a
 * lost answer keeps it (the rotation may have landed): the same command again finds it done.
 */
export async function rotateLedgerCredential(request: RotateCredentialRequest): Promise<RotateCredentialResult> {
  const client = await request.target('admin');
  const old = await client.credential(request.credentialId);
  if (isAbsolute(request.credentialFile) && (await exists(request.credentialFile))) {
    const done = await finishedRotation(client.url, request.credentialFile, request.credentialId);
    if (done !== null) return { credential: done, replaced: await client.credential(request.credentialId), outcome: 'unchanged', credential_file: request.credentialFile };
  }
  const kind = LEDGER_KINDS.find((known) => known === old.kind);
  if (kind === undefined) throw new UserError('ledger_bad_response', `The ledger at ${client.url} answered a credential of a kind lexec does not know; nothing was changed.`, { nextStep: 'Use a lexec of the ledger\'s own version.' });
  const pending = await writePendingCredential(request.credentialFile, kind);
  try {
    const rotation = await client.rotateCredential(request.credentialId, {
      newCredentialId: `cred_${randomUUID()}`,
      digestSha256: pending.digestSha256,
      graceSeconds: request.graceSeconds,
    });
    return { ...rotation, credential_file: pending.file };
  } catch (error) {
    // Only a refusal proves nothing changed; an unreachable ledger may have rotated before its answer was lost.
    if (!answerMayBeLost(error)) await discardPendingCredential(pending);
    throw error;
  }
}
