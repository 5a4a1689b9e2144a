// The processes of the randomized proof runs (bench/proof/driver.mjs; docs/reliability.md
// "Randomized runs"): killing a published pid only while it is still the process that was
// published, the `lexec` commands a run starts, the stacks and Temporal dev servers it has
// running (so an interrupted runner stops them all), and what is kept of a run's stack home
// afterwards.
import { execFile } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const BIN = join(resolve(dirname(fileURLToPath(import.meta.url)), '..', '..'), 'bin', 'run.js');

/**
 * A process's state letter and start time — field 22 of /proc/<pid>/stat, clock ticks after boot
 * (the command name, field 2, is in parentheses and may hold spaces or ')') — or null when there
 * is no such process.
 */
export function processStat(pid) {
  let text;
  try {
    text = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return null;
  }
  const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
  const startTicks = Number(fields[19]);
  return fields[0] === undefined || !Number.isInteger(startTicks) ? null : { state: fields[0], startTicks };
}

/**
 * SIGKILLs `pid` only while it is the process that was published with `startTicks` (the start
 * time its publisher read then), so a pid the kernel has handed to another process meanwhile is
 * never killed. Answers what happened: `killed`; `no_process` (none, or one that has exited and
 * not yet been reaped); `pid_reused` (another process has the pid now); `start_unknown` (nothing
 * was published to compare with: not killed).
 */
export function killVerified(pid, startTicks) {
  const stat = processStat(pid);
  if (stat === null || stat.state === 'Z' || stat.state === 'X') return 'no_process';
  if (typeof startTicks !== 'number') return 'start_unknown';
  if (stat.startTicks !== startTicks) return 'pid_reused';
  try {
    process.kill(pid, 'SIGKILL');
    return 'killed';
  } catch {
    return 'no_process';
  }
}

/** The pid a stack published for a component (`temporal`: the executor's Temporal child), with its start time; null while there is none. */
export function publishedProcess(stateDir, target) {
  try {
    const published =
      target === 'temporal'
        ? JSON.parse(readFileSync(join(stateDir, 'temporal', 'server.json'), 'utf8'))
        : JSON.parse(readFileSync(join(stateDir, 'supervisor.json'), 'utf8')).components?.[target];
    return typeof published?.pid === 'number' ? { pid: published.pid, startTicks: published.pid_start_ticks ?? null } : null;
  } catch {
    return null;
  }
}

/** Every process a stack published: its supervisor, the supervisor's children and the executor's Temporal child. */
function publishedProcesses(stateDir) {
  const found = [];
  try {
    const state = JSON.parse(readFileSync(join(stateDir, 'supervisor.json'), 'utf8'));
    if (typeof state.supervisor_pid === 'number') found.push({ pid: state.supervisor_pid, startTicks: state.supervisor_pid_start_ticks ?? null });
  } catch {
    // no supervisor state (yet)
  }
  for (const target of ['executor', 'ledger', 'sandbox', 'temporal']) {
    const published = publishedProcess(stateDir, target);
    if (published !== null) found.push(published);
  }
  return found;
}

/**
 * What a run has going: its stacks (by home), the Temporal dev servers it runs itself, and its
 * `lexec` commands in flight (`finishing`: those a stop lets end by themselves).
 */
export function createRunRegistry() {
  return { stacks: new Map(), servers: new Set(), commands: new Set(), finishing: new Set(), stopping: false };
}

/**
 * `lexec <args>` as a child process (tracked in `registry` while it runs); answers its exit code
 * and output. `finishOnStop`: a stop waits for it to end instead of killing it — a `stack start`,
 * whose detached supervisor would outlive a killed start and publish itself after the stop had
 * looked (or find the start's launcher lock still held: `stack stop` exits 5).
 */
export function lexec(args, env, timeoutMs, registry = null, { finishOnStop = false } = {}) {
  return new Promise((done) => {
    const child = execFile(process.execPath, [BIN, ...args], { env, timeout: timeoutMs, maxBuffer: 16 * 1024 * 1024 }, (error, stdout, stderr) => {
      done({ code: error === null ? 0 : typeof error.code === 'number' ? error.code : -1, stdout, stderr });
    });
    if (registry === null) return;
    registry.commands.add(child);
    if (finishOnStop) registry.finishing.add(child);
    child.once('exit', () => {
      registry.commands.delete(child);
      registry.finishing.delete(child);
    });
  });
}

/** Resolves once `child` has exited (at once when it already has). */
function exited(child) {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => child.once('exit', () => resolve()));
}

/**
 * `lexec stack stop`, then SIGKILL to whatever the stack published that is still running (the same
 * process). Given the registry, the stop is one of its commands that a `stopAll` lets finish
 * before it stops anything itself, so no stop outlives the runner's (which would recreate the
 * stack's state directory after the runner removed it).
 */
export async function stopStack({ env, stateDir }, registry = null) {
  const stopped = await lexec(['stack', 'stop', '--json'], env, 120_000, registry, { finishOnStop: true });
  const leftovers = publishedProcesses(stateDir).filter(({ pid, startTicks }) => killVerified(pid, startTicks) === 'killed');
  return { stopped: stopped.code === 0, output: stopped.stdout.slice(0, 500), killed: leftovers.length };
}

/**
 * Stops everything `registry` has going: the commands in flight first (no agent keeps submitting;
 * a `stack start` is let finish, so that its stack is all there to stop), then every stack, then
 * the dev servers they used.
 */
export async function stopAll(registry) {
  // A run's agents and chaos still waiting for their offset start nothing more.
  registry.stopping = true;
  const commands = [...registry.commands];
  for (const child of commands) if (!registry.finishing.has(child)) child.kill('SIGTERM');
  await Promise.all(commands.map(exited));
  const stacks = [...registry.stacks.values()];
  registry.stacks.clear();
  await Promise.all(stacks.map((stack) => stopStack(stack)));
  const servers = [...registry.servers];
  registry.servers.clear();
  await Promise.all(servers.map((server) => server.stop()));
}

/**
 * A finished run's stack home: removed when the run was clean; kept when `keep` — moved under
 * `keepDir` (when given: a directory that outlives the runner's own), else left where it is.
 * Answers where it is kept, or null.
 */
export function settleHome(home, { keep, keepDir = null }) {
  if (!existsSync(home)) return null;
  if (!keep) {
    rmSync(home, { recursive: true, force: true });
    return null;
  }
  if (keepDir === null) return home;
  mkdirSync(keepDir, { recursive: true });
  const kept = join(keepDir, basename(home));
  try {
    renameSync(home, kept);
  } catch {
    // another file system: copied, then removed
    cpSync(home, kept, { recursive: true });
    rmSync(home, { recursive: true, force: true });
  }
  return kept;
}
