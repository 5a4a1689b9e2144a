import { readTemporalChild } from './managed-temporal-child.js';
import { isRunning, isSameProcess, readProcessStat, sendSignal, terminateProcess, waitUntil } from '../../process/process-identity.js';
import type { ProfilePaths } from '../home/stack-home.js';
import { runningSupervisorPid } from '../home/stack-locks.js';
import { readSupervisorState, writeSupervisorState, type SupervisorState } from './supervisor-state.js';

/*
 * The processes of a stack as the launcher commands see them: the supervisor (the pid in its
 * lock, confirmed by the start time it published) and the children recorded in
 * state/supervisor.json. Used by start, stop and status; docs/stack-runtime.md "Orphans".
 */

export interface RecordedChild {
  readonly component: string;
  readonly pid: number;
  readonly startTicks: number | null;
}

/** supervisor.json, or null when it is missing or damaged (a damaged one must not block a stop). */
export async function readStateLeniently(paths: ProfilePaths): Promise<SupervisorState | null> {
  return readSupervisorState(paths).catch(() => null);
}

/** The pid of the profile's live supervisor, or null. A zombie or a reused pid is not one. */
export async function liveSupervisorPid(paths: ProfilePaths, state: SupervisorState | null): Promise<number | null> {
  const pid = await runningSupervisorPid(paths);
  if (pid === null) return null;
  // supervisor.json may still be the previous supervisor's while a new one starts up.
  const alive = state?.supervisor_pid === pid ? await isSameProcess(pid, state.supervisor_pid_start_ticks) : await isRunning(pid);
  return alive ? pid : null;
}

/**
 * Recorded children that are still running (the very processes recorded, not reused pids): the
 * supervisor's, and a managed Temporal server its executor recorded (an executor that was
 * SIGKILLed leaves it behind).
 */
export async function liveRecordedChildren(state: SupervisorState | null, paths?: ProfilePaths): Promise<RecordedChild[]> {
  const live: RecordedChild[] = [];
  for (const [component, status] of Object.entries(state?.components ?? {})) {
    if (status.pid !== null && (await isSameProcess(status.pid, status.pid_start_ticks))) live.push({ component, pid: status.pid, startTicks: status.pid_start_ticks });
  }
  const temporal = paths === undefined ? null : await liveTemporalChild(paths);
  if (temporal !== null) live.push(temporal);
  return live;
}

/** The managed Temporal server recorded in `state/temporal/server.json`, if that very process still runs. */
export async function liveTemporalChild(paths: ProfilePaths): Promise<RecordedChild | null> {
  const record = await readTemporalChild(paths.temporalDataDir);
  if (record?.pid == null || !(await isSameProcess(record.pid, record.startTicks))) return null;
  return { component: 'temporal', pid: record.pid, startTicks: record.startTicks };
}

export interface StackTakedown {
  /** The supervisor did not stop within the bound and was killed with its process group. */
  readonly forced: boolean;
  /** Children that outlived their supervisor and were stopped here. */
  readonly orphans: readonly RecordedChild[];
  /** Processes still there after SIGKILL (uninterruptible); normally empty. */
  readonly survivors: readonly RecordedChild[];
}

/**
 * Stops a stack: SIGTERM to the supervisor, which stops its children in reverse order; if it is
 * not gone within `boundMs`, SIGKILL to its whole process group (the children are in it). Then
 * any recorded child still running — left by a supervisor that was killed earlier — is stopped
 * (SIGTERM, SIGKILL after `orphanGraceMs`). supervisor.json is left saying the stack is stopped.
 */
export async function takeDownStack(paths: ProfilePaths, supervisorPid: number | null, options: { boundMs: number; orphanGraceMs: number }): Promise<StackTakedown> {
  let forced = false;
  if (supervisorPid !== null) {
    const startTicks = (await readProcessStat(supervisorPid))?.startTicks ?? null;
    const gone = async () => !(await isSameProcess(supervisorPid, startTicks));
    sendSignal(supervisorPid, 'SIGTERM');
    if (!(await waitUntil(gone, options.boundMs))) {
      forced = true;
      const stat = await readProcessStat(supervisorPid);
      // It is its own process group leader (started detached); its children share the group.
      sendSignal(stat?.pgid === supervisorPid ? -supervisorPid : supervisorPid, 'SIGKILL');
      await waitUntil(gone, options.orphanGraceMs);
    }
  }
  const state = await readStateLeniently(paths);
  const orphans = await liveRecordedChildren(state, paths);
  await Promise.all(orphans.map((child) => terminateProcess(child.pid, child.startTicks, options.orphanGraceMs)));
  const survivors = await liveRecordedChildren(state, paths);
  // A supervisor that could not say so itself (killed) left a state that still reads "running".
  if (state !== null && state.phase !== 'stopped' && state.phase !== 'failed' && survivors.length === 0) {
    const components = Object.fromEntries(
      Object.entries(state.components).map(([name, status]) => [name, { ...status, state: 'stopped' as const, pid: null, pid_start_ticks: null, probe_error: null }]),
    );
    await writeSupervisorState(paths, { ...state, phase: 'stopped', step: null, components });
  }
  return { forced, orphans, survivors };
}
