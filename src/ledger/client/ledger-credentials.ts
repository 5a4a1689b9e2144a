import { randomUUID } from 'node:crypto';
import { unlink } from 'node:fs/promises';
import { dirname, isAbsolute } from 'node:path';
import { capabilityDigest, generateCapability } from '../../credentials/capability.js';
import { ensurePrivateDirectory } from '../../credentials/private-file.js';
import { errorCode, UsageError, UserError } from '../../errors.js';
import type { IssuableCredentialKind, LedgerClient } from './ledger-client.js';
import { writeNewFile } from '../../storage/write-new-file.js';
import type { LedgerConnector } from './ledger-connector.js';

/** A credential this CLI generated, wrote and registered. Never holds the capability itself. */
export interface IssuedCredential {
  readonly credential_id: string;
  readonly kind: IssuableCredentialKind;
  readonly agent_id: string | null;
  readonly credential_file: string;
  readonly outcome: 'created' | 'unchanged';
}

/** A capability already written to its private file but not yet registered at the ledger. */
export interface PendingCredential {
  readonly kind: IssuableCredentialKind;
  readonly file: string;
  readonly digestSha256: string;
}

/**
 * Generates a capability of `kind` and writes it to `file` (0600, in a 0700 directory), before
 * anything is sent to the ledger: every local failure — relative path, existing file, loose
 * directory — happens while nothing has changed anywhere. An existing file is never replaced:
 * it may be the only copy of a credential in use.
 */
export async function writePendingCredential(file: string, kind: IssuableCredentialKind): Promise<PendingCredential> {
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
export async function registerPendingCredential(client: LedgerClient, pending: PendingCredential, agentId: string | null): Promise<IssuedCredential> {
  const credentialId = `cred_${randomUUID()}`;
  try {
    const registered = await client.registerCredential(credentialId, { kind: pending.kind, agentId, digestSha256: pending.digestSha256 });
    return { credential_id: credentialId, kind: pending.kind, agent_id: agentId, credential_file: pending.file, outcome: registered.outcome };
  } catch (error) {
    await discardPendingCredential(pending);
    throw error;
  }
}

export async function discardPendingCredential(pending: PendingCredential): Promise<void> {
  await unlink(pending.file).catch(() => undefined);
}

export interface CreateCredentialRequest {
  readonly target: LedgerConnector;
  readonly kind: IssuableCredentialKind;
  readonly agentId: string | null;
  readonly credentialFile: string;
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
  return { credential: await registerPendingCredential(client, pending, request.agentId) };
}
