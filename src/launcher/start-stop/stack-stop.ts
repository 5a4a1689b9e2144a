import { access } from 'node:fs/promises';
import { ExitCode, UserError } from '../../errors.js';
import { withdrawHandoff } from '../handoff/handoff.js';
import { probePort, type PortHolder } from '../../process/port-probe.js';
import { waitUntil } from '../../process/process-identity.js';
import type { ProfilePaths } from '../home/stack-home.js';
import { acquireLauncherLock } from '../home/stack-locks.js';
import { liveSupervisorPid, readStateLeniently, takeDownStack } from '../supervisor/stack-processes.js';
import { knownProfilePaths } from '../profiles/existing-profile.js';
import { countExecutions } from '../status/executor-database.js';

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

/** What a stop reports while it works (what it waits for, and how long); the stop renderer words it. */
export type StopEvent =
  /** Executions not yet terminal when the stop began: they resume at the next start. */
  | { readonly kind: 'executions_in_flight'; readonly count: number }
  | { readonly kind: 'stopping_supervisor'; readonly supervisor_pid: number; readonly components: readonly string[]; readonly bound_ms: number }
  /** The supervisor did not stop within its bound: killed (SIGKILL) with its process group. */
  | { readonly kind: 'supervisor_killed'; readonly supervisor_pid: number | null; readonly bound_ms: number };

export interface StopRequest {
  readonly env: NodeJS.ProcessEnv;
  readonly profileFlag: string | undefined;
  readonly progress?: (event: StopEvent) => void;
}

export interface StopResult {
  readonly profile: string;
  readonly outcome: 'stopped' | 'already_stopped';
  /** The supervisor that was stopped, or null when none was running. */
  readonly supervisor_pid: number | null;
  /** The supervisor did not stop within its bound and was killed with its process group. */
  readonly forced: boolean;
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
      orphans_stopped: [],
      handoff_withdrawn: false,
      ports_busy: [],
      elapsed_ms: Date.now() - started,
      executions_in_flight: null,
    };
  }
  const release = await acquireLauncherLock(paths);
  try {
    return await stopProfile(paths, started, request.progress ?? (() => undefined));
  } finally {
    await release();
  }
}

async function stopProfile(paths: ProfilePaths, started: number, progress: (event: StopEvent) => void): Promise<StopResult> {
  const handoffExisted = await fileExists(paths.handoffFile);
  await withdrawHandoff(paths);
  const before = await readStateLeniently(paths);
  const supervisorPid = await liveSupervisorPid(paths, before);
  const inFlight = supervisorPid === null ? null : await countExecutions(paths.executorDatabase, ['pending', 'scheduled', 'running']);
  if (inFlight !== null && inFlight > 0) {
    progress({ kind: 'executions_in_flight', count: inFlight });
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
  const ports = Object.values(after?.components ?? before?.components ?? {}).map((component) => component.port);
  const portsBusy = await busyPorts(ports);
  const stopped = supervisorPid !== null || takedown.orphans.length > 0;
  return {
    profile: paths.name,
    outcome: stopped ? 'stopped' : 'already_stopped',
    supervisor_pid: supervisorPid,
    forced: takedown.forced,
    orphans_stopped: takedown.orphans.map((child) => ({ component: child.component, pid: child.pid })),
    handoff_withdrawn: handoffExisted,
    ports_busy: portsBusy,
    elapsed_ms: Date.now() - started,
    executions_in_flight: inFlight,
  };
}

async function fileExists(path: string): Promise<boolean> {
  return access(path).then(
    () => true,
    () => false,
  );
}

/** Ports still in use once the stack is down (waiting briefly for the kernel to release them). */
async function busyPorts(ports: readonly number[]): Promise<StopResult['ports_busy']> {
  const busy: { port: number; holder: PortHolder | null }[] = [];
  for (const port of ports) {
    let probe = await probePort(port);
    if (!probe.free) {
      await waitUntil(async () => (probe = await probePort(port)).free, PORT_RELEASE_WAIT_MS, 100);
    }
    if (!probe.free) busy.push({ port, holder: probe.holder });
  }
  return busy;
}

/** Whether the stack of a profile is still held by its supervisor (for `start --foreground`). */
export async function supervisorStillRunning(paths: ProfilePaths): Promise<boolean> {
  return (await liveSupervisorPid(paths, await readStateLeniently(paths))) !== null;
}
