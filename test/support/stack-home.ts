import { readFile, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { isSameProcess, sendSignal } from '../../src/process/process-identity.js';
import { profilePaths, type ProfilePaths } from '../../src/launcher/home/stack-home.js';
import { readSupervisorState, type SupervisorState } from '../../src/launcher/supervisor/supervisor-state.js';
import { makeTempDir, removeDir, runLexec, type CliRun } from './cli.js';
import { sandboxProfile, writeProfile, type StackPorts, type TomlTable } from './example-profiles.js';

/*
 * A temporary LEXEC_HOME with a sandbox profile written from the shipped example, its three
 * ports replaced by ports free right now and reserved for this test worker (free-ports.ts), so
 * test files can run stacks side by side.
 */

export interface StackHome {
  readonly home: string;
  readonly paths: ProfilePaths;
  readonly ports: StackPorts;
}

export interface StackHomeOptions {
  /** Prefix of the new temporary home (default `lexec-stack-rt-`). */
  readonly prefix?: string;
  /** Profile name (default "sandbox"). */
  readonly profile?: string;
  /** Changes the example's table before it is written (the ports are already free ones). */
  readonly edit?: (table: TomlTable) => void;
  /** The example the profile is made from (default `sandbox`; any sandbox-kind example). */
  readonly example?: string;
}

/** Adds a sandbox profile on free ports to an existing home. */
export async function addStackProfile(home: string, options: Omit<StackHomeOptions, 'prefix'> = {}): Promise<StackHome> {
  const name = options.profile ?? 'sandbox';
  const { text, ports } = await sandboxProfile(options.edit, options.example);
  await writeProfile(home, name, text);
  return { home, paths: profilePaths(home, name), ports };
}

export async function makeStackHome(options: StackHomeOptions = {}): Promise<StackHome> {
  return addStackProfile(await makeTempDir(options.prefix ?? 'lexec-stack-rt-'), options);
}

/** `lexec <args>` with LEXEC_HOME set; generous timeout (a start waits for three servers on a busy machine). */
export function lexecIn(home: string, args: readonly string[], timeoutMs = 120_000): Promise<CliRun> {
  return runLexec(args, { env: { LEXEC_HOME: home }, home, timeoutMs });
}

/** `stack render` then `stack activate` of that generation (what a first `stack start` does first); returns its id. */
export async function renderAndActivate(home: string, profile = 'sandbox'): Promise<string> {
  const id = jsonResult<{ generation_id: string }>(await lexecIn(home, ['stack', 'render', '--profile', profile, '--json'])).generation_id;
  jsonResult(await lexecIn(home, ['stack', 'activate', '--profile', profile, '--generation', id, '--json']));
  return id;
}

// The caller names the shape it expects of the result; the envelope itself is checked here.
// eslint-disable-next-line @typescript-eslint/no-unnecessary-type-parameters
export function jsonResult<T = Record<string, unknown>>(run: CliRun): T {
  const document = JSON.parse(run.stdout) as { ok: boolean; result?: T; error?: unknown };
  if (!document.ok || document.result === undefined) throw new Error(`not a success envelope: ${run.stdout}\n${run.stderr}`);
  return document.result;
}

export function jsonError(run: CliRun): { code: string; message: string; next_step: string; kind: string } {
  const document = JSON.parse(run.stdout) as { ok: boolean; error?: { code: string; message: string; next_step: string; kind: string } };
  if (document.ok || document.error === undefined) throw new Error(`not a failure envelope: ${run.stdout}`);
  return document.error;
}

export async function readState(paths: ProfilePaths): Promise<SupervisorState> {
  const state = await readSupervisorState(paths);
  if (state === null) throw new Error('no supervisor.json');
  return state;
}

/** Every pid recorded in supervisor.json (supervisor and children) with its start time. */
export function recordedProcesses(state: SupervisorState): { pid: number; startTicks: number | null; name: string }[] {
  const children = Object.entries(state.components).flatMap(([name, status]) => (status.pid === null ? [] : [{ pid: status.pid, startTicks: status.pid_start_ticks, name }]));
  return [{ pid: state.supervisor_pid, startTicks: state.supervisor_pid_start_ticks, name: 'supervisor' }, ...children];
}

export async function stillRunning(processes: readonly { pid: number; startTicks: number | null; name: string }[]): Promise<string[]> {
  const alive: string[] = [];
  for (const process of processes) if (await isSameProcess(process.pid, process.startTicks)) alive.push(`${process.name} ${process.pid}`);
  return alive;
}

/** Polls `check` until it returns a value other than undefined, or fails after `timeoutMs`. */
export async function eventually<T>(what: string, check: () => T | undefined | Promise<T | undefined>, timeoutMs = 60_000, intervalMs = 200): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const value = await check();
      if (value !== undefined) return value;
    } catch (error) {
      last = error;
    }
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}${last instanceof Error ? `: ${last.message}` : ''}`);
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}

/** Every capability stored under the profile's credentials directory (to prove none leaks). */
export async function storedCapabilities(paths: ProfilePaths): Promise<string[]> {
  const files = (await readdir(paths.credentialsDir, { recursive: true })).map(String).filter((name) => name.endsWith('.capability'));
  return Promise.all(files.map(async (name) => (await readFile(join(paths.credentialsDir, name), 'utf8')).trim()));
}

/** `stack stop` of the profile; as a last resort kills whatever its supervisor.json still records. */
export async function stopStack(stack: StackHome): Promise<void> {
  await lexecIn(stack.home, ['stack', 'stop', '--profile', stack.paths.name, '--json']).catch(() => undefined);
  const state = await readSupervisorState(stack.paths).catch(() => null);
  if (state !== null) {
    for (const process of recordedProcesses(state)) if (await isSameProcess(process.pid, process.startTicks)) sendSignal(process.pid, 'SIGKILL');
  }
}

/** Stops the stack (`stopStack`), then removes the home. */
export async function destroyStackHome(stack: StackHome): Promise<void> {
  await stopStack(stack);
  await removeDir(stack.home);
}
