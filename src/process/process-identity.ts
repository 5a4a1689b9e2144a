import { readFile } from 'node:fs/promises';
import { errorCode } from '../errors.js';
import { processAlive } from '../storage/process-lock.js';

/*
 * Telling a process apart from a later one that reuses its pid. The supervisor records each
 * child's pid together with its kernel start time (field 22 of /proc/<pid>/stat, clock ticks
 * since boot); a process is "the recorded one" only if both match. A launcher therefore never
 * signals an unrelated process that happens to have inherited a recorded pid. Linux only: where
 * /proc is missing the start time is null and only the pid is compared.
 */

export interface ProcessStat {
  /** One-letter state: R, S, D, T, Z (zombie), X (dead)… */
  readonly state: string;
  readonly ppid: number;
  readonly pgid: number;
  /** Start time in clock ticks after boot. */
  readonly startTicks: number;
}

/** The parsed /proc/<pid>/stat of a process, or null when there is no such process (or no /proc). */
export async function readProcessStat(pid: number): Promise<ProcessStat | null> {
  const text = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => null);
  if (text === null) return null;
  // The command name (field 2) is in parentheses and may itself contain spaces or ')'.
  const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
  const [state, ppid, pgid] = [fields[0], Number(fields[1]), Number(fields[2])];
  const startTicks = Number(fields[19]);
  if (state === undefined || !Number.isInteger(ppid) || !Number.isInteger(pgid) || !Number.isInteger(startTicks)) return null;
  return { state, ppid, pgid, startTicks };
}

/** Whether `pid` is a live process (a zombie — exited, not yet reaped — is not). */
export function isRunning(pid: number): Promise<boolean> {
  return Promise.resolve(Number.isInteger(pid) && pid > 0 && processAlive(pid));
}

/** Whether the live process `pid` is the one that was recorded with `startTicks` (null: unknown, pid only). */
export async function isSameProcess(pid: number, startTicks: number | null): Promise<boolean> {
  if (!(await isRunning(pid))) return false;
  if (startTicks === null) return true;
  const stat = await readProcessStat(pid);
  return stat === null || stat.startTicks === startTicks;
}

/** The start time of a live process, for recording next to its pid; null without /proc. */
export async function processStartTicks(pid: number): Promise<number | null> {
  return (await readProcessStat(pid))?.startTicks ?? null;
}

/** Sends a signal, ignoring a process that is already gone. */
export function sendSignal(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(pid, signal);
  } catch (error) {
    if (errorCode(error) !== 'ESRCH') throw error;
  }
}

/** Waits until `gone()` is true or `timeoutMs` passes; true when it is gone. */
export async function waitUntil(gone: () => Promise<boolean>, timeoutMs: number, intervalMs = 50): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await gone()) return true;
    if (Date.now() >= deadline) return false;
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}

/**
 * Stops a recorded process: SIGTERM (and SIGCONT, so a stopped process can act on it), then
 * SIGKILL once `graceMs` has passed. Returns how it ended: `gone` (was not running),
 * `terminated` or `killed`; `stuck` if it survived SIGKILL for `graceMs` more (uninterruptible).
 */
export async function terminateProcess(pid: number, startTicks: number | null, graceMs: number): Promise<'gone' | 'terminated' | 'killed' | 'stuck'> {
  if (!(await isSameProcess(pid, startTicks))) return 'gone';
  const gone = async () => !(await isSameProcess(pid, startTicks));
  sendSignal(pid, 'SIGTERM');
  sendSignal(pid, 'SIGCONT');
  if (await waitUntil(gone, graceMs)) return 'terminated';
  sendSignal(pid, 'SIGKILL');
  return (await waitUntil(gone, graceMs)) ? 'killed' : 'stuck';
}
