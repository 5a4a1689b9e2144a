import { readFile, stat } from 'node:fs/promises';
import { createServer, type Server } from 'node:net';
import { execa } from 'execa';
import { afterEach, describe, expect, it } from 'vitest';
import { profilePaths } from '../../../src/launcher/home/stack-home.js';
import { BIN, makeTempDir, removeDir } from '../../support/cli.js';
import { exampleText } from '../../support/example-profiles.js';
import {
  destroyStackHome,
  eventually,
  jsonError,
  jsonResult,
  lexecIn,
  makeStackHome,
  readState,
  recordedProcesses,
  stillRunning,
} from '../../support/stack-home.js';

/*
 * What `stack start` refuses or recovers from: the first start of a home without a profile,
 * busy ports (named with their holder), a concurrent launcher command (exit 5), and the lock a
 * SIGKILLed launcher left behind.
 */

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function holdPort(port: number): Promise<Server | null> {
  const server = createServer();
  return new Promise((resolve) => {
    server.once('error', () => {
      resolve(null);
    });
    server.listen({ port, host: '127.0.0.1' }, () => {
      resolve(server);
    });
  });
}

function closeServer(server: Server | null): Promise<void> {
  return new Promise((resolve) => {
    if (server === null) resolve();
    else
      server.close(() => {
        resolve();
      });
  });
}

/** `stack start --json` as a background child process the test can kill. */
function backgroundStart(home: string, ...extra: string[]) {
  return execa(process.execPath, [BIN, 'stack', 'start', '--json', ...extra], {
    env: { PATH: process.env.PATH ?? '', HOME: home, LEXEC_HOME: home },
    extendEnv: false,
    reject: false,
    stdin: 'ignore',
  });
}

async function lockOwner(path: string): Promise<number | undefined> {
  const text = await readFile(path, 'utf8').catch(() => '');
  const pid = Number.parseInt(text, 10);
  return Number.isInteger(pid) && pid > 0 ? pid : undefined;
}

describe('stack start guards', () => {
  it('creates the sandbox profile from the shipped example on the first start without a profile, and refuses a busy default port (exit 1)', async () => {
    const home = await makeTempDir('lexec-stack-first-');
    // Held by this test (or by someone else already): either way the start stops at preflight.
    const held = await holdPort(7400);
    cleanups.push(async () => {
      await closeServer(held);
      await removeDir(home);
    });
    const run = await lexecIn(home, ['stack', 'start', '--json']);
    expect(run.exitCode, run.stderr).toBe(1);
    expect(jsonError(run).code).toBe('port_in_use');
    if (held !== null) expect(jsonError(run).message).toContain(`port 7400 is in use by pid ${process.pid}`);
    const paths = profilePaths(home, 'sandbox');
    expect(await readFile(paths.source, 'utf8')).toBe(exampleText('sandbox'));
    expect(run.stderr).toContain('created profile "sandbox" from profiles.example/sandbox.toml');
    // Nothing was started, and the launcher lock was released.
    await expect(stat(paths.supervisorState)).rejects.toThrow();
    await expect(stat(paths.commandLock)).rejects.toThrow();
  });

  it('names the holder of a busy port (pid and process name) and starts nothing', async () => {
    const stack = await makeStackHome();
    const held = await holdPort(stack.ports.ledger);
    cleanups.push(async () => {
      await closeServer(held);
      await destroyStackHome(stack);
    });
    expect(held).not.toBeNull();
    const run = await lexecIn(stack.home, ['stack', 'start', '--json']);
    expect(run.exitCode).toBe(1);
    const error = jsonError(run);
    expect(error.code).toBe('port_in_use');
    expect(error.message).toContain(`ledger: port ${stack.ports.ledger} is in use by pid ${process.pid} (`);
    expect(error).toMatchObject({ issues: [{ path: 'ports.ledger' }] });
    await expect(stat(stack.paths.supervisorState)).rejects.toThrow();

    const human = await lexecIn(stack.home, ['stack', 'start']);
    expect(human.exitCode).toBe(1);
    expect(human.stderr).toContain(`in use by pid ${process.pid}`);
  });

  it('refuses a concurrent launcher command with exit 5 while a start holds the profile, then that start completes', async () => {
    const stack = await makeStackHome();
    cleanups.push(() => destroyStackHome(stack));
    const first = backgroundStart(stack.home);
    await eventually('the first start to take the launcher lock', async () => ((await lockOwner(stack.paths.commandLock)) === first.pid ? true : undefined), 30_000, 20);
    // Frozen while it holds the lock: on a loaded machine it could otherwise finish (and release
    // the lock) before the two commands below have even started.
    const frozen = first.pid ?? 0;
    let ended = false;
    void first.finally(() => (ended = true));
    process.kill(frozen, 'SIGSTOP');
    const thaw = () => {
      if (!ended) process.kill(frozen, 'SIGCONT');
    };
    cleanups.push(() => {
      thaw();
      return Promise.resolve();
    });
    const second = await lexecIn(stack.home, ['stack', 'start', '--json']);
    expect(second.exitCode).toBe(5);
    expect(jsonError(second)).toMatchObject({ code: 'profile_locked' });
    const stop = await lexecIn(stack.home, ['stack', 'stop', '--json']);
    expect(stop.exitCode).toBe(5);
    thaw();
    const done = await first;
    expect(done.exitCode, done.stderr).toBe(0);
    expect(jsonResult({ exitCode: 0, stdout: done.stdout, stderr: done.stderr })).toMatchObject({ outcome: 'started' });
  });

  it('recovers the lock of a launcher killed with SIGKILL during start: the next start succeeds and stop leaves nothing behind', async () => {
    const stack = await makeStackHome();
    cleanups.push(() => destroyStackHome(stack));
    const first = backgroundStart(stack.home);
    await eventually('the first start to take the launcher lock', async () => ((await lockOwner(stack.paths.commandLock)) === first.pid ? true : undefined), 30_000, 20);
    first.kill('SIGKILL');
    await first;
    expect(await lockOwner(stack.paths.commandLock)).toBe(first.pid);

    const again = await lexecIn(stack.home, ['stack', 'start', '--json']);
    expect(again.exitCode, again.stderr).toBe(0);
    // The killed launcher may or may not have spawned its supervisor before it died.
    expect(['started', 'already_running']).toContain(jsonResult<{ outcome: string }>(again).outcome);
    const recorded = recordedProcesses(await readState(stack.paths));

    const stop = await lexecIn(stack.home, ['stack', 'stop', '--json']);
    expect(stop.exitCode, stop.stderr).toBe(0);
    expect(await stillRunning(recorded)).toEqual([]);
  });

  it('--foreground stays attached once ready and stops the stack in order on Ctrl-C (SIGINT)', async () => {
    const stack = await makeStackHome();
    cleanups.push(() => destroyStackHome(stack));
    const launcher = backgroundStart(stack.home, '--foreground');
    await eventually('the foreground start to write the handoff', async () => ((await stat(stack.paths.handoffFile).catch(() => null)) === null ? undefined : true), 90_000);
    const recorded = recordedProcesses(await readState(stack.paths));
    // Attached, but not holding the launcher lock: status and stop work from elsewhere meanwhile.
    expect(jsonResult<{ state: string }>(await lexecIn(stack.home, ['stack', 'status', '--json'])).state).toBe('running');
    launcher.kill('SIGINT');
    const done = await launcher;
    expect(done.exitCode, done.stderr).toBe(0);
    expect(jsonResult({ exitCode: 0, stdout: done.stdout, stderr: done.stderr })).toMatchObject({ outcome: 'started', foreground: { ended_by: 'SIGINT' } });
    expect(await stillRunning(recorded)).toEqual([]);
    await expect(stat(stack.paths.handoffFile)).rejects.toThrow();
  });
});
