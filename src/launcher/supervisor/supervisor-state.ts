import { randomBytes } from 'node:crypto';
import { rename, unlink, writeFile } from 'node:fs/promises';
import { UserError } from '../../errors.js';
import { readJsonFile } from '../../storage/read-json-file.js';
import type { ProfilePaths } from '../home/stack-home.js';

/*
 * `state/supervisor.json`: the supervisor's published view of its stack (docs/stack-runtime.md
 * "Supervisor state"). Written only by the supervisor (and by `stack stop` after it had to kill
 * a supervisor that could not write it any more), atomically: a temporary file renamed over the
 * old one, so a reader sees either the previous or the new document, never a torn one.
 *
 * Read by `stack start`, `stack stop` and `stack status`. It is checked here by hand instead of
 * with zod: `stack status` must start within 1.5x of a bare oclif command and loading zod alone
 * costs about 70 ms, more than that whole margin. The check is as strict as a schema would be:
 * every field's type, nothing missing.
 */

export const SUPERVISOR_STATE_VERSION = 1;

export const COMPONENT_STATES = ['starting', 'running', 'restarting', 'stopped', 'failed'] as const;
export type ComponentState = (typeof COMPONENT_STATES)[number];

/** Where the supervisor is in its life: bringing the stack up, supervising it, taking it down, gone. */
export const SUPERVISOR_PHASES = ['starting', 'running', 'stopping', 'stopped', 'failed'] as const;
export type SupervisorPhase = (typeof SUPERVISOR_PHASES)[number];

export interface ComponentExit {
  readonly code: number | null;
  readonly signal: string | null;
  readonly at: string;
}

export interface ComponentStatus {
  readonly state: ComponentState;
  readonly pid: number | null;
  /** Kernel start time of `pid` (src/process/process-identity.ts), so a reused pid is never mistaken for it. */
  readonly pid_start_ticks: number | null;
  readonly port: number;
  /** When the current process was spawned. */
  readonly started_at: string | null;
  /** When the current process first passed its readiness probe; null while it has not. */
  readonly ready_at: string | null;
  /** Restarts after unexpected exits since the supervisor started. */
  readonly restarts: number;
  readonly last_exit: ComponentExit | null;
  /** The last failed readiness probe of the current process while it was starting (no secret: a status or socket error). */
  readonly probe_error: string | null;
}

/** A step that failed in a way waiting cannot fix: the supervisor stopped the stack and exited. */
export interface SupervisorFailure {
  readonly step: string;
  readonly code: string;
  readonly message: string;
  readonly next_step: string;
}

export interface SupervisorState {
  readonly state_version: typeof SUPERVISOR_STATE_VERSION;
  readonly profile: string;
  readonly generation_id: string;
  readonly supervisor_pid: number;
  readonly supervisor_pid_start_ticks: number | null;
  readonly started_at: string;
  readonly phase: SupervisorPhase;
  /** What the supervisor is doing while `starting` (e.g. "credential bootstrap"), for progress and timeouts. */
  readonly step: string | null;
  readonly failure: SupervisorFailure | null;
  /** The profile's local agent at the ledger, once provisioned. */
  readonly agent: { readonly name: string; readonly agent_id: string } | null;
  readonly components: Readonly<Partial<Record<'ledger' | 'executor' | 'sandbox', ComponentStatus>>>;
  /**
   * Where this stack's own ledger is reached and the CA its clients verify it with, when its
   * profile sets `[ledger.http]` (absent: http://127.0.0.1:<port>); docs/deployment.md.
   */
  readonly own_ledger?: { readonly endpoint: string; readonly ca_file: string | null };
  /** An executor host's remote ledger (absent when the stack runs its own; docs/deployment.md "Roles"). */
  readonly remote_ledger?: { readonly url: string; readonly ca_file: string | null };
}

/** Writes the state atomically (temporary file in the same directory, then rename), mode 0600. */
export async function writeSupervisorState(paths: ProfilePaths, state: SupervisorState): Promise<void> {
  const temporary = `${paths.supervisorState}.${randomBytes(6).toString('hex')}.tmp`;
  try {
    await writeFile(temporary, `${JSON.stringify(state, null, 2)}\n`, { mode: 0o600, flag: 'wx' });
    await rename(temporary, paths.supervisorState);
  } catch (error) {
    await unlink(temporary).catch(() => undefined);
    throw error;
  }
}

type Check = (value: unknown) => boolean;
const isString: Check = (value) => typeof value === 'string';
const isInteger: Check = (value) => Number.isInteger(value);
const nullable =
  (check: Check): Check =>
  (value) =>
    value === null || check(value);
const oneOf =
  (values: readonly string[]): Check =>
  (value) =>
    typeof value === 'string' && values.includes(value);
const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);
const shape =
  (fields: Record<string, Check>): Check =>
  (value) =>
    isObject(value) && Object.entries(fields).every(([key, check]) => check(value[key]));

const exitShape = shape({ code: nullable(isInteger), signal: nullable(isString), at: isString });
const componentShape = shape({
  state: oneOf(COMPONENT_STATES),
  pid: nullable(isInteger),
  pid_start_ticks: nullable(isInteger),
  port: isInteger,
  started_at: nullable(isString),
  ready_at: nullable(isString),
  restarts: isInteger,
  last_exit: nullable(exitShape),
  probe_error: nullable(isString),
});
const stateShape = shape({
  state_version: (value) => value === SUPERVISOR_STATE_VERSION,
  profile: isString,
  generation_id: isString,
  supervisor_pid: isInteger,
  supervisor_pid_start_ticks: nullable(isInteger),
  started_at: isString,
  phase: oneOf(SUPERVISOR_PHASES),
  step: nullable(isString),
  failure: nullable(shape({ step: isString, code: isString, message: isString, next_step: isString })),
  agent: nullable(shape({ name: isString, agent_id: isString })),
  components: (value) => isObject(value) && Object.entries(value).every(([name, component]) => ['ledger', 'executor', 'sandbox'].includes(name) && componentShape(component)),
});

/** The published state, or null when the supervisor never ran. A damaged file is a user error. */
export async function readSupervisorState(paths: ProfilePaths): Promise<SupervisorState | null> {
  const file = await readJsonFile(paths.supervisorState);
  if (file.kind === 'missing') return null;
  const document = file.kind === 'json' ? file.document : null;
  if (!stateShape(document)) {
    throw new UserError('supervisor_state_invalid', `The supervisor state ${paths.supervisorState} of profile "${paths.name}" is damaged.`, {
      nextStep: `Run \`lexec stack stop --profile ${paths.name}\` (it stops what is recorded and that can be identified), then start again.`,
    });
  }
  return document as SupervisorState;
}
