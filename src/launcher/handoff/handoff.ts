import { unlink } from 'node:fs/promises';
import { z } from 'zod';
import { absolutePath, loopbackHttpUrl } from '../../config/schema-parts.js';
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
  ledger: z.strictObject({ endpoint: loopbackHttpUrl }),
  executor: z.strictObject({ endpoint: loopbackHttpUrl }),
  /** Absolute paths of private capability files, by role. */
  credentials: z.strictObject({
    /** Ledger admin (agents, policies, credentials). */
    admin: absolutePath,
    /** The profile's local agent: requests spend authorizations (`lexec run`). */
    agent: absolutePath,
    /** Approves or denies authorizations above the approval threshold. */
    approver: absolutePath,
    /** The executor's caller capability: executions, artifacts, catalog, targets. */
    caller: absolutePath,
    /** The executor's reconciliation capability. */
    reconciliation: absolutePath,
  }),
  agent: z.strictObject({ name: z.string(), agent_id: z.string() }),
});
export type Handoff = z.output<typeof handoffSchema>;

/** The handoff of a ready stack, from the supervisor's published state. */
export function stackHandoff(paths: ProfilePaths, state: SupervisorState, now: Date): Handoff {
  const ledger = state.components.ledger;
  const executor = state.components.executor;
  if (ledger === undefined || executor === undefined || state.agent === null) throw new Error('a ready stack without ledger, executor or agent');
  const executorCredentials = managedCredentialPaths(paths.executorCredentialsDir);
  return {
    handoff_version: HANDOFF_VERSION,
    profile: paths.name,
    generation_id: state.generation_id,
    supervisor_pid: state.supervisor_pid,
    written_at: now.toISOString(),
    ledger: { endpoint: `http://127.0.0.1:${ledger.port}` },
    executor: { endpoint: `http://127.0.0.1:${executor.port}` },
    credentials: {
      admin: paths.ledgerAdminCapability,
      agent: paths.agentCapability,
      approver: paths.approverCapability,
      caller: executorCredentials.caller,
      reconciliation: executorCredentials.reconciliation,
    },
    agent: state.agent,
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
