import { dirname } from 'node:path';
import { capabilityDigest, capabilityKind, generateCapability } from '../../credentials/capability.js';
import { ensurePrivateDirectory, readPrivateFile, readPrivateFileIfPresent } from '../../credentials/private-file.js';
import { UserError } from '../../errors.js';
import { createLedgerClient, type LedgerClient } from '../../ledger/client/ledger-client.js';
import type { LedgerAgent } from '../../ledger/wire/answers.js';
import { writeNewFile } from '../../storage/write-new-file.js';

/*
 * The profile's local credentials at its own ledger (docs/stack-runtime.md "Start sequence"):
 * the agent `lexec run` acts as (named by the profile's [agent].name) with its capability, and
 * an approver capability for decisions above the approval threshold, and the metrics capability a
 * Prometheus scraper presents at both servers (the executor registers the same file at its own
 * start, which comes after this one). Run by the supervisor after
 * the ledger is ready, on every start, and idempotent:
 *
 * - the agent is found by name, or added;
 * - a credential file that exists is registered again under an id derived from its own digest
 *   (`unchanged` ⇒ reused; `created` ⇒ the ledger had lost it, e.g. a restored database);
 * - a missing file is generated, written 0600 (in a 0700 directory) and then registered.
 *
 * Deriving the id from the digest means a lost file never collides with the old registration:
 * the new capability simply gets a new id, and the old one is useless without its secret.
 * Capabilities leave this module only in the Authorization header and in their own files.
 */

export type LocalCredentialOutcome = 'created' | 'reused';

type LocalKind = 'agent' | 'approver' | 'metrics';

export interface LocalCredentialsRequest {
  readonly ledgerUrl: string;
  /** The CA certificate (PEM) an https ledger is verified against (`[ledger.http.tls] ca_file`). */
  readonly caCertificate?: string;
  readonly adminCapabilityPath: string;
  /** The profile's agent; null on a ledger host (it runs no executor, so no `lexec run`). */
  readonly agentName: string | null;
  readonly agentCapabilityPath: string;
  readonly approverCapabilityPath: string;
  readonly metricsCapabilityPath: string;
}

export interface LocalCredentialsResult {
  readonly agent: { readonly name: string; readonly agent_id: string } | null;
  readonly agent_outcome: LocalCredentialOutcome | null;
  readonly agent_credential: LocalCredentialOutcome | null;
  readonly approver_credential: LocalCredentialOutcome;
  readonly metrics_credential: LocalCredentialOutcome;
}

async function findOrAddAgent(admin: LedgerClient, name: string): Promise<{ agent: LedgerAgent; outcome: LocalCredentialOutcome }> {
  const existing = (await admin.listAgents()).find((agent) => agent.name === name);
  if (existing !== undefined) return { agent: existing, outcome: 'reused' };
  try {
    return { agent: await admin.addAgent(name), outcome: 'created' };
  } catch (error) {
    // Only one supervisor runs per profile, but the operator may have added it just now by hand.
    const raced = error instanceof UserError && error.code === 'ledger_conflict' ? (await admin.listAgents()).find((agent) => agent.name === name) : undefined;
    if (raced === undefined) throw error;
    return { agent: raced, outcome: 'reused' };
  }
}

/** The capability in `path`, or null when there is no file; an unusable file fails closed, untouched. */
async function existingCapability(path: string, kind: LocalKind): Promise<string | null> {
  const token = await readPrivateFileIfPresent(path, `${kind} capability`);
  if (token === null) return null;
  if (capabilityKind(token) !== kind) {
    throw new UserError('local_credential_conflict', `The file ${path} does not hold a capability of kind ${kind} (its content is not shown); lexec never overwrites a credential file.`, {
      nextStep: `Move ${path} away after checking what it is; the next \`lexec stack start\` creates a new one.`,
    });
  }
  return token;
}

async function ensureCredential(admin: LedgerClient, path: string, kind: LocalKind, agentId: string | null): Promise<LocalCredentialOutcome> {
  let token = await existingCapability(path, kind);
  const existed = token !== null;
  if (token === null) {
    token = generateCapability(kind);
    await ensurePrivateDirectory(dirname(path));
    if ((await writeNewFile(path, `${token}\n`, 0o600)) === 'exists') {
      throw new UserError('local_credential_conflict', `The credential file ${path} appeared while the stack started; it was left as it is.`, {
        nextStep: 'Make sure only one launcher manages this profile, then start again: the file is reused.',
      });
    }
  }
  const digest = capabilityDigest(token).toString('hex');
  const registered = await admin.registerCredential(`lexec-local-${kind}-${digest.slice(0, 16)}`, { kind, agentId, digestSha256: digest });
  return existed && registered.outcome === 'unchanged' ? 'reused' : 'created';
}

/** Finds or adds the local agent and makes sure its capability and the approver capability exist and are registered. */
export async function provisionLocalCredentials(request: LocalCredentialsRequest): Promise<LocalCredentialsResult> {
  const admin = createLedgerClient({
    url: request.ledgerUrl,
    token: await readPrivateFile(request.adminCapabilityPath, 'ledger admin capability'),
    ...(request.caCertificate === undefined ? {} : { caCertificate: request.caCertificate }),
  });
  const found = request.agentName === null ? null : await findOrAddAgent(admin, request.agentName);
  const agentCredential = found === null ? null : await ensureCredential(admin, request.agentCapabilityPath, 'agent', found.agent.agent_id);
  const approverCredential = await ensureCredential(admin, request.approverCapabilityPath, 'approver', null);
  const metricsCredential = await ensureCredential(admin, request.metricsCapabilityPath, 'metrics', null);
  return {
    agent: found === null ? null : { name: found.agent.name, agent_id: found.agent.agent_id },
    agent_outcome: found?.outcome ?? null,
    agent_credential: agentCredential,
    approver_credential: approverCredential,
    metrics_credential: metricsCredential,
  };
}
