import { access } from 'node:fs/promises';
import { ExitCode, UserError } from '../../errors.js';
import { readHandoff, withdrawHandoff, writeHandoff, type Handoff } from '../handoff/handoff.js';
import { probePort, type PortHolder } from '../../process/port-probe.js';
import { waitUntil } from '../../process/process-identity.js';
import type { ProfilePaths } from '../home/stack-home.js';
import { acquireLauncherLock } from '../home/stack-locks.js';
import { liveSupervisorPid, readStateLeniently, takeDownStack } from '../supervisor/stack-processes.js';
import { knownProfilePaths } from '../profiles/existing-profile.js';
import { IN_FLIGHT_STATES } from '../../executor/domain/execution-states.js';
import { countExecutions } from '../status/executor-database.js';
import { countPendingApprovals } from '../status/ledger-database.js';
import { endpointHost, type StackComponent } from '../generations/render-generation.js';
import type { SupervisorState } from '../supervisor/supervisor-state.js';
import { drainExecutions, type DrainEvent, type DrainOutcome } from './stack-drain.js';

/*
 * `stack stop` (docs/stack-runtime.md "Stop"): under the launcher lock, withdraw the handoff
 * first (so no client picks up a stack that is going away), ask the supervisor to stop (it stops
 * the executor and sandbox, then the ledger, each SIGTERM then SIGKILL after a bound), force its
 * process group if it does not finish in time, stop any child a killed supervisor left behind,
 * then verify that no recorded process remains and the ports are free.
 */

/** Executor drain (15 s) + ledger (10 s) + margin; past it the supervisor's group is killed. */
const SUPERVISOR_STOP_BOUND_MS = 40_000;
const ORPHAN_GRACE_MS = 5_000;
/** A port can stay busy for a moment after its listener exits. */
const PORT_RELEASE_WAIT_MS = 3_000;

/** How long `--wait` waits for executions in flight unless told otherwise. */
export const DEFAULT_DRAIN_BOUND_MS = 600_000;

/** What a stop reports while it works (what it waits for, and how long); the stop renderer words it. */
export type StopEvent =
  /** Executions not yet terminal when the stop began (`waiting`: --wait lets them finish first; otherwise they resume at the next start). */
  | { readonly kind: 'executions_in_flight'; readonly count: number; readonly waiting: boolean }
  /** Authorizations waiting for an approver: they stay in the ledger (until they expire) and can be decided after the next start. */
  | { readonly kind: 'approvals_pending'; readonly count: number }
  | DrainEvent
  /** --wait ended with executions still in flight (its bound passed): they resume at the next start. */
  | { readonly kind: 'drain_timed_out'; readonly remaining: number; readonly waited_ms: number }
  /** A component did not stop within its bound after SIGTERM and was killed (SIGKILL) by the supervisor. */
  | { readonly kind: 'component_killed'; readonly component: string; readonly pid: number | null }
  | { readonly kind: 'stopping_supervisor'; readonly supervisor_pid: number; readonly components: readonly string[]; readonly bound_ms: number }
  /** The supervisor did not stop within its bound: killed (SIGKILL) with its process group. */
  | { readonly kind: 'supervisor_killed'; readonly supervisor_pid: number | null; readonly bound_ms: number };

export interface StopRequest {
  readonly env: NodeJS.ProcessEnv;
  readonly profileFlag: string | undefined;
  readonly progress?: (event: StopEvent) => void;
  /** `--wait`: let executions in flight finish (up to this many ms) before stopping anything; absent, stop at once. */
  readonly drainBoundMs?: number;
  /** Ctrl-C during the --wait: the stop is called off and the stack keeps running, findable again. */
  readonly signal?: AbortSignal;
}

export interface StopResult {
  readonly profile: string;
  readonly outcome: 'stopped' | 'already_stopped';
  /** The supervisor that was stopped, or null when none was running. */
  readonly supervisor_pid: number | null;
  /**
   * Something was killed (SIGKILL) rather than stopped: the supervisor, past its bound, with its
   * process group, or a component that did not stop within its own bound (`killed` names them).
   */
  readonly forced: boolean;
  /** Components the supervisor killed (SIGKILL) because they did not stop within their bound after SIGTERM. */
  readonly killed: readonly string[];
  /** Children left running by a supervisor killed earlier, stopped by this command. */
  readonly orphans_stopped: readonly { readonly component: string; readonly pid: number }[];
  readonly handoff_withdrawn: boolean;
  /** Ports of the stack still in use by some other process after the stop (normally empty). */
  readonly ports_busy: readonly { readonly port: number; readonly holder: PortHolder | null }[];
  /**
   * Executions not yet terminal (pending, scheduled, running) when the stop began, read from the
   * executor's database; null when it could not be read. They are durable: each resumes at the
   * next start, none is submitted twice.
   */
  readonly executions_in_flight: number | null;
  /** Authorizations waiting for an approver when the stop began (they stay in the ledger); null when it could not be read. */
  readonly approvals_pending: number | null;
  /** What `--wait` came to; null without --wait or when nothing was in flight. */
  readonly drain: Omit<DrainOutcome, 'outcome'> & { readonly outcome: 'drained' | 'timed_out' } | null;
  readonly elapsed_ms: number;
}

export async function stopStack(request: StopRequest): Promise<StopResult> {
  const started = Date.now();
  const paths = await knownProfilePaths(request);
  // Nothing to stop, and the lock must not create a state directory for a profile never started.
  if (!(await fileExists(paths.stateDir))) {
    return {
      profile: paths.name,
      outcome: 'already_stopped',
      supervisor_pid: null,
      forced: false,
      killed: [],
      orphans_stopped: [],
      handoff_withdrawn: false,
      ports_busy: [],
      elapsed_ms: Date.now() - started,
      executions_in_flight: null,
      approvals_pending: null,
      drain: null,
    };
  }
  const release = await acquireLauncherLock(paths);
  try {
    return await stopProfile(paths, started, request);
  } finally {
    await release();
  }
}

async function stopProfile(paths: ProfilePaths, started: number, request: StopRequest): Promise<StopResult> {
  const progress = request.progress ?? (() => undefined);
  const handoffExisted = await fileExists(paths.handoffFile);
  // Kept to be put back if a --wait is called off: the stack then keeps running, findable again.
  const handoff = request.drainBoundMs === undefined ? null : await readHandoff(paths).catch(() => null);
  await withdrawHandoff(paths);
  const before = await readStateLeniently(paths);
  const supervisorPid = await liveSupervisorPid(paths, before);
  const inFlight = supervisorPid === null ? null : await countExecutions(paths.executorDatabase, IN_FLIGHT_STATES);
  const approvals = supervisorPid === null ? null : await countPendingApprovals(paths.ledgerDatabase);
  if (inFlight !== null && inFlight > 0) progress({ kind: 'executions_in_flight', count: inFlight, waiting: request.drainBoundMs !== undefined });
  if (approvals !== null && approvals > 0) progress({ kind: 'approvals_pending', count: approvals });
  let drain: StopResult['drain'] = null;
  if (supervisorPid !== null && inFlight !== null && inFlight > 0 && request.drainBoundMs !== undefined) {
    const drained = await drainExecutions({ databasePath: paths.executorDatabase, initial: inFlight, boundMs: request.drainBoundMs, signal: request.signal, progress });
    if (drained.outcome === 'interrupted') throw await callOff(paths, supervisorPid, handoff, drained);
    if (drained.outcome === 'timed_out') progress({ kind: 'drain_timed_out', remaining: drained.remaining, waited_ms: drained.waited_ms });
    drain = { ...drained, outcome: drained.outcome };
  }
  if (supervisorPid !== null) {
    progress({ kind: 'stopping_supervisor', supervisor_pid: supervisorPid, components: Object.keys(before?.components ?? {}), bound_ms: SUPERVISOR_STOP_BOUND_MS });
  }
  const takedown = await takeDownStack(paths, supervisorPid, { boundMs: SUPERVISOR_STOP_BOUND_MS, orphanGraceMs: ORPHAN_GRACE_MS });
  if (takedown.forced) progress({ kind: 'supervisor_killed', supervisor_pid: supervisorPid, bound_ms: SUPERVISOR_STOP_BOUND_MS });
  if (takedown.survivors.length > 0) {
    throw new UserError('stack_stop_incomplete', `Some processes of profile "${paths.name}" survived SIGKILL: ${takedown.survivors.map((child) => `${child.component} pid ${child.pid}`).join(', ')}.`, {
      nextStep: 'They are probably blocked in the kernel (uninterruptible I/O); wait, then run `lexec stack stop` again.',
      exitCode: ExitCode.failure,
    });
  }
  const after = await readStateLeniently(paths);
  const killed = killedComponents(after, started);
  for (const component of killed) progress({ kind: 'component_killed', component, pid: before?.components[component]?.pid ?? null });
  const portsBusy = await busyPorts(stackListeners(after ?? before));
  const stopped = supervisorPid !== null || takedown.orphans.length > 0;
  return {
    profile: paths.name,
    outcome: stopped ? 'stopped' : 'already_stopped',
    supervisor_pid: supervisorPid,
    forced: takedown.forced || killed.length > 0,
    killed,
    orphans_stopped: takedown.orphans.map((child) => ({ component: child.component, pid: child.pid })),
    handoff_withdrawn: handoffExisted,
    ports_busy: portsBusy,
    elapsed_ms: Date.now() - started,
    executions_in_flight: inFlight,
    approvals_pending: approvals,
    drain,
  };
}

/** Components whose process this stop's supervisor ended with SIGKILL (their last exit, since the stop began). */
function killedComponents(state: Awaited<ReturnType<typeof readStateLeniently>>, since: number): StackComponent[] {
  const entries = Object.entries(state?.components ?? {}) as [StackComponent, { last_exit: { signal: string | null; at: string } | null }][];
  return entries.filter(([, status]) => status.last_exit?.signal === 'SIGKILL' && Date.parse(status.last_exit.at) >= since - 1_000).map(([component]) => component);
}

/** A --wait interrupted: the handoff goes back if the same supervisor still runs the stack, and the stop ends with exit 130. */
async function callOff(paths: ProfilePaths, supervisorPid: number, handoff: Handoff | null, drained: DrainOutcome): Promise<UserError> {
  const stillRunning = (await liveSupervisorPid(paths, await readStateLeniently(paths))) === supervisorPid;
  const restored = stillRunning && handoff !== null && handoff.supervisor_pid === supervisorPid;
  if (restored) await writeHandoff(paths, handoff);
  const flag = ` --profile ${paths.name}`;
  return new UserError(
    'stack_stop_interrupted',
    `Interrupted while waiting for ${drained.remaining} execution${drained.remaining === 1 ? '' : 's'} in flight: nothing was stopped${restored ? ', and clients can find the stack again' : ''}.`,
    { nextStep: restored ? `Run \`lexec stack stop${flag}\` (with --wait to wait again) when ready.` : `The stack runs without its handoff: \`lexec stack start${flag}\` writes it again, \`lexec stack stop${flag}\` stops the stack.`, exitCode: ExitCode.interrupted },
  );
}

async function fileExists(path: string): Promise<boolean> {
  return access(path).then(
    () => true,
    () => false,
  );
}

/** Where the stack's components listened: each port on 127.0.0.1, its own ledger's on the address of its `[ledger.http]`. */
function stackListeners(state: SupervisorState | null): { readonly port: number; readonly host: string }[] {
  return Object.entries(state?.components ?? {}).map(([component, status]) => ({
    port: status.port,
    host: component === 'ledger' ? endpointHost(state?.own_ledger?.endpoint) : '127.0.0.1',
  }));
}

/** Ports still in use once the stack is down, each probed on the address it listened on (waiting briefly for the kernel to release them). */
async function busyPorts(listeners: readonly { readonly port: number; readonly host: string }[]): Promise<StopResult['ports_busy']> {
  const busy: { port: number; holder: PortHolder | null }[] = [];
  for (const { port, host } of listeners) {
    let probe = await probePort(port, host);
    if (!probe.free) {
      await waitUntil(async () => (probe = await probePort(port, host)).free, PORT_RELEASE_WAIT_MS, 100);
    }
    if (!probe.free) busy.push({ port, holder: probe.holder });
  }
  return busy;
}

/** Whether the stack of a profile is still held by its supervisor (for `start --foreground`). */
export async function supervisorStillRunning(paths: ProfilePaths): Promise<boolean> {
  return (await liveSupervisorPid(paths, await readStateLeniently(paths))) !== null;
}
