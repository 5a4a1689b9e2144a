import { unlink } from 'node:fs/promises';
import { z } from 'zod';
import { absolutePath, credentialedEndpointUrl, loopbackHttpUrl } from '../../config/schema-parts.js';
import { toFieldIssues } from '../../config/zod-issues.js';
import { writePrivateFile } from '../../credentials/private-file.js';
import { errorCode, UserError } from '../../errors.js';
import { readJsonFile } from '../../storage/read-json-file.js';
import { generationIdSchema } from '../generations/render-generation.js';
import { managedCredentialPaths } from '../../executor/managed-credentials.js';
import type { ProfilePaths } from '../home/stack-home.js';
import { rewriteHandoffStep } from './handoff-step.js';
import type { SupervisorState } from '../supervisor/supervisor-state.js';

/*
 * The active handoff (spec §5.6): how CLI clients find a running stack — its endpoints plus the
 * paths of the credential files, never the credentials. The supervisor writes it (0600 in the
 * 0700 state directory) as soon as the stack is ready — whatever became of the terminal that ran
 * `stack start` — and withdraws it when it stops; `stack stop` withdraws it first. A server-bound
 * command on a selected profile takes endpoint and credential paths from it as one bundle.
 */

export const HANDOFF_VERSION = 1;

export const handoffSchema = z.strictObject({
  handoff_version: z.literal(HANDOFF_VERSION),
  profile: z.string(),
  generation_id: generationIdSchema,
  /** The supervisor that owns the stack; a handoff whose supervisor is gone is not active. */
  supervisor_pid: z.number().int().positive(),
  written_at: z.iso.datetime(),
  /** This host's own ledger (on loopback, or where `[ledger.http]` says, https with `ca_file`), or an executor host's remote ledger. */
  ledger: z.strictObject({ endpoint: credentialedEndpointUrl, ca_file: absolutePath.optional() }),
  /** Absent on a ledger host (it runs no executor). */
  executor: z.strictObject({ endpoint: loopbackHttpUrl }).optional(),
  /**
   * Absolute paths of private capability files, by role: those this host's role holds (docs/deployment.md
   * "Roles"): a ledger host has no agent, caller or reconciliation; an executor host no admin or approver.
   */
  credentials: z.strictObject({
    /** Ledger admin (agents, policies, credentials). */
    admin: absolutePath.optional(),
    /** The profile's local agent: requests spend authorizations (`lexec run`). */
    agent: absolutePath.optional(),
    /** Approves or denies authorizations above the approval threshold. */
    approver: absolutePath.optional(),
    /** The executor's caller capability: executions, artifacts, catalog, targets. */
    caller: absolutePath.optional(),
    /** The executor's reconciliation capability. */
    reconciliation: absolutePath.optional(),
  }),
  /** Absent on a ledger host. */
  agent: z.strictObject({ name: z.string(), agent_id: z.string() }).optional(),
});
export type Handoff = z.output<typeof handoffSchema>;

/** The handoff of a ready stack, from the supervisor's published state. */
export function stackHandoff(paths: ProfilePaths, state: SupervisorState, now: Date): Handoff {
  const ledger = state.components.ledger;
  const executor = state.components.executor;
  const remote = state.remote_ledger;
  if ((ledger === undefined && remote === undefined) || (executor !== undefined && state.agent === null)) throw new Error('a ready stack without a ledger, or an executor without its agent');
  const executorCredentials = managedCredentialPaths(paths.executorCredentialsDir);
  return {
    handoff_version: HANDOFF_VERSION,
    profile: paths.name,
    generation_id: state.generation_id,
    supervisor_pid: state.supervisor_pid,
    written_at: now.toISOString(),
    ledger:
      ledger !== undefined
        ? state.own_ledger !== undefined
          ? { endpoint: state.own_ledger.endpoint, ...(state.own_ledger.ca_file === null ? {} : { ca_file: state.own_ledger.ca_file }) }
          : { endpoint: `http://127.0.0.1:${ledger.port}` }
        : { endpoint: remote?.url ?? '', ...(remote?.ca_file == null ? {} : { ca_file: remote.ca_file }) },
    ...(executor === undefined ? {} : { executor: { endpoint: `http://127.0.0.1:${executor.port}` } }),
    credentials: {
      // The ledger's own credentials on the host that runs it; the executor's where one runs.
      ...(ledger === undefined ? {} : { admin: paths.ledgerAdminCapability, approver: paths.approverCapability }),
      ...(executor === undefined ? {} : { agent: paths.agentCapability, caller: executorCredentials.caller, reconciliation: executorCredentials.reconciliation }),
    },
    ...(state.agent === null ? {} : { agent: state.agent }),
  };
}

export async function writeHandoff(paths: ProfilePaths, handoff: Handoff): Promise<void> {
  await writePrivateFile(paths.handoffFile, `${JSON.stringify(handoffSchema.parse(handoff), null, 2)}\n`);
}

/** The handoff on disk, or null when there is none. A damaged one is a user error. */
export async function readHandoff(paths: ProfilePaths): Promise<Handoff | null> {
  const file = await readJsonFile(paths.handoffFile);
  if (file.kind === 'missing') return null;
  // Text that is not JSON is judged as an empty (null) document: damaged, like any invalid one.
  const parsed = handoffSchema.safeParse(file.kind === 'json' ? file.document : null, { reportInput: true });
  if (!parsed.success) {
    throw new UserError('handoff_invalid', `The active handoff of profile "${paths.name}" (${paths.handoffFile}) is damaged.`, {
      nextStep: rewriteHandoffStep(paths.name),
      issues: toFieldIssues(parsed.error.issues),
    });
  }
  return parsed.data;
}

/** Withdraws the handoff; nothing to do when there is none. */
export async function withdrawHandoff(paths: ProfilePaths): Promise<void> {
  await unlink(paths.handoffFile).catch((error: unknown) => {
    if (errorCode(error) !== 'ENOENT') throw error;
  });
}
