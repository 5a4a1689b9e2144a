import { mkdtemp, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { openRotatingLog } from '../../../src/process/rotating-log.js';
import type * as SupervisedChildModule from '../../../src/launcher/supervisor/supervised-child.js';
import { PACKAGE_ROOT, removeDir } from '../../support/cli.js';

// The built module: it starts children with its compiled preload (exit-with-supervisor.js) beside it.
const { spawnSupervisedChild } = (await import(join(PACKAGE_ROOT, 'dist/launcher/supervisor/supervised-child.js'))) as typeof SupervisedChildModule;

/* One supervised child (src/launcher/supervisor/supervised-child.ts), on the built lexec binary. */

const dirs: string[] = [];
afterEach(async () => {
  await Promise.all(dirs.splice(0).map((dir) => removeDir(dir)));
});

async function childHome() {
  const dir = await mkdtemp(join(tmpdir(), 'lexec-child-'));
  dirs.push(dir);
  const logsDir = join(dir, 'logs');
  return { dir, logsDir, log: openRotatingLog({ logsDir, component: 'sandbox' }), logText: () => readFile(join(logsDir, 'sandbox.log'), 'utf8') };
}

async function until(what: string, condition: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + 60_000;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

describe('a supervised child', () => {
  it('writes its output to the log line by line and reports its exit; it gets exactly the environment given', async () => {
    const home = await childHome();
    // The supervisor's own environment must not leak into a child: a relative LEXEC_HOME here
    // would make `stack status` a usage error (exit 2) if the child inherited it.
    const saved = process.env.LEXEC_HOME;
    process.env.LEXEC_HOME = 'relative/home';
    try {
      const child = await spawnSupervisedChild({ args: ['stack', 'status', '--json'], log: home.log, service: 'status', env: { PATH: process.env.PATH ?? '', HOME: home.dir }, cwd: home.dir, stopGraceMs: 1_000 });
      expect(child.pid).toBeGreaterThan(0);
      const exit = await child.exited;
      expect(exit.code).not.toBe(2);
      const lines = (await home.logText()).trimEnd().split('\n');
      expect(lines.length).toBeGreaterThan(0);
      expect(JSON.parse(lines.at(-1) ?? '')).toMatchObject({ command: 'stack status' });
      expect(await home.logText()).not.toContain('relative/home');
    } finally {
      if (saved === undefined) delete process.env.LEXEC_HOME;
      else process.env.LEXEC_HOME = saved;
      home.log.close();
    }
  });

  it('a child that cannot start writes its error text on stderr: each line goes into the log as a JSON line at error level', async () => {
    const home = await childHome();
    try {
      const missing = join(home.dir, 'missing.json');
      const child = await spawnSupervisedChild({ args: ['ledger', 'serve', '--config', missing], log: home.log, service: 'ledger', env: { PATH: process.env.PATH ?? '', HOME: home.dir }, cwd: home.dir, stopGraceMs: 1_000 });
      expect((await child.exited).code).toBe(1);
      const lines = (await home.logText()).trimEnd().split('\n').map((line) => JSON.parse(line) as Record<string, unknown>);
      expect(lines.length).toBeGreaterThan(1);
      for (const line of lines) expect(line).toMatchObject({ level: 50, service: 'ledger', pid: child.pid, event: 'process_output', stream: 'stderr' });
      expect(lines[0]?.text).toBe(`Error: The configuration file ${missing} does not exist.`);
    } finally {
      home.log.close();
    }
  });

  it('stop(): SIGTERM ends a healthy child by itself; a child that cannot answer (SIGSTOPped) is SIGKILLed after its grace', async () => {
    const home = await childHome();
    const env = { PATH: process.env.PATH ?? '', HOME: home.dir };
    // The healthy child gets a grace no loaded machine outlasts (it must end by itself); the
    // stuck one a short grace, which it cannot use.
    const started = async (stopGraceMs: number) => {
      const child = await spawnSupervisedChild({ args: ['provider', 'sandbox', 'serve', '--port', '0'], log: home.log, service: 'sandbox-provider', env, cwd: home.dir, stopGraceMs });
      const before = (await home.logText().catch(() => '')).split('sandbox_started').length;
      await until('the sandbox to start', async () => (await home.logText().catch(() => '')).split('sandbox_started').length > before);
      return child;
    };
    try {
      const healthy = await started(60_000);
      expect(await healthy.stop()).toEqual({ code: 0, signal: null });
      // Its result line on stdout (`sandbox provider stopped (…)`) is a JSON line like the rest (issue 24 item 9).
      const lines = (await home.logText()).trimEnd().split('\n');
      for (const line of lines) expect(JSON.parse(line), line).toMatchObject({ level: expect.any(Number) as unknown, time: expect.any(String) as unknown, service: 'sandbox-provider' });
      expect(JSON.parse(lines.at(-1) ?? '')).toMatchObject({
        level: 30,
        pid: healthy.pid,
        event: 'process_output',
        stream: 'stdout',
        text: 'sandbox provider stopped (SIGTERM; 0 submissions received)',
      });

      const stuck = await started(500);
      process.kill(stuck.pid, 'SIGSTOP');
      expect(await stuck.stop()).toEqual({ code: null, signal: 'SIGKILL' });
      // Stopping an exited child again sends nothing and answers the same exit.
      expect(await stuck.stop()).toEqual({ code: null, signal: 'SIGKILL' });
    } finally {
      home.log.close();
    }
  }, 120_000);
});
