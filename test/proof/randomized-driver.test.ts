import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chmod, mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { describeEvents, MODES, scheduleOf } from '../../bench/proof/driver.mjs';
import { killVerified, processStat, settleHome } from '../../bench/proof/processes.mjs';
import { makeTempDir, PACKAGE_ROOT, removeDir } from '../support/cli.js';
import { eventually } from '../support/stack-home.js';

/*
 * The randomized driver's own machinery (bench/proof/processes.mjs, driver.mjs; docs/reliability.md
 * "Randomized runs"), on real processes and real directories: a pid is killed only while it is
 * the process that was published; a run's events are told as they happened; a clean run's home
 * is removed and a broken one's kept; an interrupted runner stops the stack it started. What a
 * whole run records beside its schedule: randomized.test.ts.
 */

/** A real child process that lives until killed; answers it and the promise of its exit signal. */
function sleeper() {
  const child = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' });
  const exited = new Promise<NodeJS.Signals | null>((resolve) => child.once('exit', (_code, signal) => { resolve(signal); }));
  return { child, exited };
}

const pidOf = (child: { pid?: number | undefined }) => {
  if (child.pid === undefined) throw new Error('no pid');
  return child.pid;
};

describe('killing a published pid', () => {
  it('kills only the process that was published: a start time that differs (the pid reused) or is unknown spares it; a gone one is no process', async () => {
    const { child, exited } = sleeper();
    const pid = pidOf(child);
    const stat = await eventually('the child started', () => Promise.resolve(processStat(pid) ?? undefined), 10_000, 20);
    expect(stat.startTicks).toBeGreaterThan(0);

    expect(killVerified(pid, stat.startTicks + 1)).toBe('pid_reused');
    expect(killVerified(pid, null)).toBe('start_unknown');
    expect(processStat(pid)?.startTicks).toBe(stat.startTicks);

    expect(killVerified(pid, stat.startTicks)).toBe('killed');
    expect(await exited).toBe('SIGKILL');
    expect(killVerified(pid, stat.startTicks)).toBe('no_process');
  });

  it('reads the start time as /proc/<pid>/stat field 22, even with spaces and parentheses in the command name', async () => {
    const dir = await makeTempDir('lexec-proof-stat-');
    try {
      // A command name of its own: a copy of sleep(1) called "a) b (c" (Node names its own main thread).
      const odd = join(dir, 'a) b (c');
      await writeFile(odd, await readFile('/bin/sleep'));
      await chmod(odd, 0o755);
      const child = spawn(odd, ['300'], { stdio: 'ignore' });
      const pid = pidOf(child);
      const exited = new Promise((resolve) => child.once('exit', resolve));
      const stat = await eventually('the child started', () => Promise.resolve(processStat(pid) ?? undefined), 10_000, 20);
      const raw = await readFile(`/proc/${String(pid)}/stat`, 'utf8');
      expect(raw).toContain('(a) b (c)');
      expect(stat.startTicks).toBe(Number(raw.slice(raw.lastIndexOf(')') + 2).split(' ')[19]));
      expect(killVerified(pid, stat.startTicks)).toBe('killed');
      await exited;
    } finally {
      await removeDir(dir);
    }
  });
});

describe('what a run records and keeps', () => {
  it('tells each event as it happened: what, when after the load started, and its outcome (a refused fault with its status)', () => {
    expect(
      describeEvents([
        { kind: 'kill', target: 'executor', scheduled_at: 1200, at: 1203, outcome: 'killed', pid: 4242 },
        { kind: 'kill', target: 'ledger', scheduled_at: 2000, at: 2010, outcome: 'no_process', pid: null },
        { kind: 'fault', fault: 'latency', scheduled_at: 3000, at: 3001, outcome: 'refused', status: 503 },
        { kind: 'fault', fault: 'drop_after_receipt', scheduled_at: 3500, at: 3502, outcome: 'set', status: 200 },
      ]),
    ).toBe('kill executor +1203ms killed, kill ledger +2010ms no_process, fault latency +3001ms refused (503), fault drop_after_receipt +3502ms set');
  });

  it('in a two-stack run names the stack of each kill and fault; a termination names the scheduled execution whose run it ended', () => {
    expect(
      describeEvents([
        { kind: 'kill', target: 'executor', stack: 'b', scheduled_at: 100, at: 101, outcome: 'killed', pid: 4242 },
        { kind: 'kill', target: 'temporal', scheduled_at: 900, at: 902, outcome: 'killed', pid: 4343 },
        { kind: 'fault', fault: 'latency', stack: 'a', scheduled_at: 1000, at: 1001, outcome: 'set', status: 200 },
        { kind: 'terminate', execution: 2, scheduled_at: 1500, at: 2300, outcome: 'terminated', workflow_id: 'lexec-execution-exe_0' },
      ]),
    ).toBe('kill b:executor +101ms killed, kill temporal +902ms killed, fault a:latency +1001ms set, terminate #2 +2300ms terminated');
  });

  it('the seed chooses the mode; a single run\'s schedule is what its seed made before modes existed, and only Temporal runs have other modes', () => {
    // Seed 11 on Temporal and seed 7 embedded, as CI has run them since before the modes.
    expect(scheduleOf(11, 'temporal')).toMatchObject({ mode: 'single', executions: expect.any(Array) as unknown });
    expect(scheduleOf(11, 'temporal').chaos.map((event) => [event.kind, event.at])).toEqual([['kill', 964], ['kill', 1656], ['fault', 2330], ['kill', 4021]]);
    expect(scheduleOf(7, 'embedded').chaos.map((event) => [event.kind, event.at])).toEqual([['kill', 4378]]);
    const modes = (engine: 'embedded' | 'temporal') => new Set(Array.from({ length: 200 }, (_, seed) => scheduleOf(seed, engine).mode));
    expect(modes('embedded')).toEqual(new Set(['single']));
    expect(modes('temporal')).toEqual(new Set(MODES));
    // A two-stack run spreads its executions over both stacks; a terminations run ends runs of its own executions.
    const shared = scheduleOf(29, 'temporal');
    expect(shared.mode).toBe('two_executors');
    expect(new Set(shared.executions.map((execution) => execution.stack))).toEqual(new Set([0, 1]));
    const terminations = scheduleOf(51, 'temporal');
    expect(terminations.mode).toBe('terminations');
    for (const event of terminations.chaos) if (event.kind === 'terminate') expect(event.execution).toBeLessThan(terminations.executions.length);
  });

  it('removes a clean run\'s home; keeps a broken run\'s, moved under the directory given (or where it is)', async () => {
    const dir = await makeTempDir('lexec-proof-homes-');
    try {
      const home = async (name: string) => {
        const path = join(dir, 'work', name);
        await mkdir(join(path, 'profiles'), { recursive: true });
        await writeFile(join(path, 'profiles', 'evidence'), name);
        return path;
      };
      const clean = await home('proof-embedded-1-a');
      expect(settleHome(clean, { keep: false, keepDir: join(dir, 'kept') })).toBeNull();
      expect(existsSync(clean)).toBe(false);

      const broken = await home('proof-embedded-2-b');
      const kept = settleHome(broken, { keep: true, keepDir: join(dir, 'kept') });
      expect(kept).toBe(join(dir, 'kept', 'proof-embedded-2-b'));
      expect(existsSync(broken)).toBe(false);
      expect(await readFile(join(kept ?? '', 'profiles', 'evidence'), 'utf8')).toBe('proof-embedded-2-b');

      const inPlace = await home('proof-temporal-3-c');
      expect(settleHome(inPlace, { keep: true })).toBe(inPlace);
      expect(existsSync(inPlace)).toBe(true);
    } finally {
      await removeDir(dir);
    }
  });
});

/** Every process whose environment names `home` as its LEXEC_HOME (this user's processes; others cannot be read). */
async function processesOfHome(home: string): Promise<number[]> {
  const found: number[] = [];
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
    const environ = await readFile(`/proc/${entry}/environ`, 'utf8').catch(() => '');
    if (environ.split('\0').includes(`LEXEC_HOME=${home}`)) found.push(Number(entry));
  }
  return found;
}

/** The launcher command `pid` runs: `start` for `lexec stack start …`, `supervise` for the supervisor; null for anything else. */
async function stackCommand(pid: number): Promise<string | null> {
  const argv = (await readFile(`/proc/${String(pid)}/cmdline`, 'utf8').catch(() => '')).split('\0');
  const at = argv.indexOf('stack');
  return at >= 0 ? (argv[at + 1] ?? null) : null;
}

/**
 * Starts a one-run runner (seed 7, embedded) under `dir`, waits until `when` says the moment has
 * come (given the run's stack home once it exists), sends SIGINT, and checks the interrupted
 * runner's promise: exit 130, every process of the stack gone, its directory removed.
 */
async function interruptRunner(dir: string, when: (home: string) => Promise<boolean>): Promise<void> {
  const runner = spawn(process.execPath, [join(PACKAGE_ROOT, 'bench', 'proof', 'run.mjs'), '--runs', '1', '--seed', '7', '--engine', 'embedded', '--dir', dir], {
    env: { PATH: process.env.PATH ?? '', HOME: dir },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  runner.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
  runner.stdout.resume();
  const exited = new Promise<number | null>((resolve) => runner.once('exit', (code) => { resolve(code); }));
  // Set from inside the wait below: the home to clean up after a failure.
  const seen: { home: string | null } = { home: null };
  try {
    const found = await eventually(
      'the moment to interrupt',
      async () => {
        const [work] = (await readdir(dir)).filter((name) => name.startsWith('lexec-proof-'));
        const [home] = work === undefined ? [] : (await readdir(join(dir, work))).filter((name) => name.startsWith('proof-embedded-7-'));
        if (work === undefined || home === undefined) return undefined;
        seen.home = join(dir, work, home);
        return (await when(seen.home)) ? { work: join(dir, work), home: seen.home } : undefined;
      },
      90_000,
      25,
    );
    runner.kill('SIGINT');
    expect(await exited).toBe(130);
    expect(stderr).toContain('interrupted by SIGINT; stopping the stacks');
    // Nothing of the stack is left: supervisor, ledger, executor, sandbox, any `lexec` command.
    await eventually('every process of the stack gone', async () => ((await processesOfHome(found.home)).length === 0 ? true : undefined), 30_000, 100);
    // And nothing comes up after the runner has gone (a supervisor the stop did not see).
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    expect(await processesOfHome(found.home)).toEqual([]);
    expect(existsSync(found.work)).toBe(false);
  } finally {
    if (runner.exitCode === null) runner.kill('SIGKILL');
    // Whatever the runner left of its stack (when this test fails) is ended here.
    for (const pid of seen.home === null ? [] : await processesOfHome(seen.home)) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // gone meanwhile
      }
    }
  }
}

describe('an interrupted runner', () => {
  it('SIGINT stops the stack it started (stack stop, then whatever is left) and the commands in flight, removes its directory and exits 130', async () => {
    const dir = await makeTempDir('lexec-proof-interrupted-');
    try {
      await interruptRunner(dir, async (home) => {
        // The runner's stack is up, supervising its three children, and an agent is at work.
        const state = JSON.parse(await readFile(join(home, 'profiles', 'sandbox', 'state', 'supervisor.json'), 'utf8').catch(() => '{}')) as {
          phase?: string;
          supervisor_pid?: number;
          components?: Record<string, { state: string }>;
        };
        const running = state.phase === 'running' && ['ledger', 'executor', 'sandbox'].every((name) => state.components?.[name]?.state === 'running');
        if (!running || state.supervisor_pid === undefined) return false;
        const processes = await processesOfHome(home);
        return processes.includes(state.supervisor_pid) && processes.length > 4;
      });
    } finally {
      await removeDir(dir);
    }
  }, 180_000);

  it('SIGINT while its stack is still starting lets the start end, then stops that stack: nothing of it is left running', async () => {
    const dir = await makeTempDir('lexec-proof-interrupted-start-');
    try {
      // `lexec stack start` in flight and the supervisor it spawned (detached) just started: before
      // the fix the start was killed while it held the launcher lock (the stop exited 5), and the
      // supervisor outlived both.
      await interruptRunner(dir, async (home) => {
        const commands = await Promise.all((await processesOfHome(home)).map(stackCommand));
        return commands.includes('start') && commands.includes('supervise');
      });
    } finally {
      await removeDir(dir);
    }
  }, 180_000);
});
