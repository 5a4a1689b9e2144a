import { readFile, writeFile, mkdir, readdir } from 'node:fs/promises';
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';
import { isSameProcess, sendSignal } from '../../src/stack/process-identity.js';
import { exampleProfilePath } from '../../src/stack/profile-store.js';
import { profilePaths, type ProfilePaths } from '../../src/stack/stack-home.js';
import { readSupervisorState, type SupervisorState } from '../../src/stack/supervisor-state.js';
import { makeTempDir, removeDir, runLexec, type CliRun } from './cli.js';

/*
 * A temporary LEXEC_HOME with a sandbox profile written from the shipped example, its three
 * ports replaced by ports free right now, so test files can run stacks side by side.
 */

export interface StackHome {
  readonly home: string;
  readonly paths: ProfilePaths;
  readonly ports: { readonly ledger: number; readonly executor: number; readonly sandbox: number };
}

/** Distinct loopback ports that were free a moment ago (held together, so they differ). */
export async function freePorts(count: number): Promise<number[]> {
  const servers: Server[] = [];
  const ports: number[] = [];
  for (let index = 0; index < count; index += 1) {
    const server = createServer();
    await new Promise<void>((resolve) => server.listen({ port: 0, host: '127.0.0.1' }, resolve));
    servers.push(server);
    const address = server.address();
    if (address === null || typeof address === 'string') throw new Error('no port');
    ports.push(address.port);
  }
  await Promise.all(servers.map((server) => new Promise((resolve) => server.close(resolve))));
  return ports;
}

export async function exampleProfileText(): Promise<string> {
  return readFile(exampleProfilePath('sandbox'), 'utf8');
}

export async function makeStackHome(prefix = 'lexec-stack-rt-'): Promise<StackHome> {
  const home = await makeTempDir(prefix);
  const [ledger = 0, executor = 0, sandbox = 0] = await freePorts(3);
  const paths = profilePaths(home, 'sandbox');
  await mkdir(paths.dir, { recursive: true, mode: 0o700 });
  const text = (await exampleProfileText())
    .replace(/^ledger = 7400$/m, `ledger = ${ledger}`)
    .replace(/^executor = 7410$/m, `executor = ${executor}`)
    .replace(/^sandbox = 7420$/m, `sandbox = ${sandbox}`);
  if (!text.includes(`ledger = ${ledger}`) || !text.includes(`sandbox = ${sandbox}`)) throw new Error('the example profile no longer has the expected [ports] lines');
  await writeFile(paths.source, text);
  return { home, paths, ports: { ledger, executor, sandbox } };
}

/** `lexec <args>` with LEXEC_HOME set; generous timeout (a start waits for three servers on a busy machine). */
export function lexecIn(home: string, args: readonly string[], timeoutMs = 120_000): Promise<CliRun> {
  return runLexec(args, { env: { LEXEC_HOME: home }, home, timeoutMs });
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
export async function eventually<T>(what: string, check: () => Promise<T | undefined>, timeoutMs = 60_000, intervalMs = 200): Promise<T> {
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

/** Stops the stack; as a last resort kills whatever supervisor.json still records, then removes the home. */
export async function destroyStackHome(stack: StackHome): Promise<void> {
  await lexecIn(stack.home, ['stack', 'stop', '--json']).catch(() => undefined);
  const state = await readSupervisorState(stack.paths).catch(() => null);
  if (state !== null) {
    for (const process of recordedProcesses(state)) if (await isSameProcess(process.pid, process.startTicks)) sendSignal(process.pid, 'SIGKILL');
  }
  await removeDir(stack.home);
}
