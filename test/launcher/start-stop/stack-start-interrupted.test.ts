import { spawn } from 'node:child_process';
import { readFile, rm } from 'node:fs/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { readHandoff } from '../../../src/launcher/handoff/handoff.js';
import { readSupervisorState } from '../../../src/launcher/supervisor/supervisor-state.js';
import { BIN } from '../../support/cli.js';
import { destroyStackHome, eventually, jsonResult, lexecIn, makeStackHome, type StackHome } from '../../support/stack-home.js';

/*
 * A `stack start` whose terminal goes away before the stack is ready — Ctrl-C, or a pipe closed
 * after the first line (`lexec stack start 2>&1 | head -1`) — still ends with a usable stack:
 * the supervisor writes the handoff itself once the stack is ready. And `stack status` never calls
 * a stack without an active handoff usable.
 */

interface Status {
  state: string;
  usable: boolean;
  handoff: { active: boolean; written_at: string | null };
  next_step: string | null;
  supervisor: { pid: number; phase: string } | null;
}

let stack: StackHome | undefined;

afterEach(async () => {
  if (stack !== undefined) await destroyStackHome(stack);
  stack = undefined;
}, 120_000);

/** `lexec stack start` as a child; resolves once the supervisor it spawned has published its state. */
async function startUntilSupervisor(home: StackHome) {
  const child = spawn(process.execPath, [BIN, 'stack', 'start'], { env: { PATH: process.env.PATH ?? '', HOME: home.home, LEXEC_HOME: home.home }, stdio: ['ignore', 'pipe', 'pipe'] });
  const exited = new Promise<void>((resolve) => {
    child.once('exit', () => {
      resolve();
    });
  });
  const supervisorPid = await eventually('the supervisor', async () => (await readSupervisorState(home.paths).catch(() => null))?.supervisor_pid, 60_000, 20);
  return { child, exited, supervisorPid };
}

async function status(home: StackHome): Promise<Status> {
  return jsonResult<Status>(await lexecIn(home.home, ['stack', 'status', '--json']));
}

async function expectUsableAfterwards(home: StackHome, supervisorPid: number): Promise<void> {
  const handoff = await eventually('the handoff', async () => (await readHandoff(home.paths)) ?? undefined, 90_000);
  expect(handoff.supervisor_pid).toBe(supervisorPid);
  const now = await eventually('a usable status', async () => {
    const current = await status(home);
    return current.usable ? current : undefined;
  });
  expect(now).toMatchObject({ state: 'running', usable: true, handoff: { active: true }, next_step: null });
  const run = await lexecIn(home.home, ['run', 'a kite over a dune', '--out', `${home.home}/out`, '--json']);
  expect(run.exitCode, run.stderr).toBe(0);
}

describe('an interrupted stack start', () => {
  it('Ctrl-C on the launching command: the supervisor finishes the start and writes the handoff itself', async () => {
    stack = await makeStackHome();
    const start = await startUntilSupervisor(stack);
    start.child.kill('SIGINT');
    await start.exited;
    await expectUsableAfterwards(stack, start.supervisorPid);
  }, 150_000);

  it('a pipe closed after the first line (`stack start 2>&1 | head -1`), then the launcher killed: the same', async () => {
    stack = await makeStackHome();
    const start = await startUntilSupervisor(stack);
    start.child.stdout.destroy();
    start.child.stderr.destroy();
    start.child.kill('SIGKILL');
    await start.exited;
    await expectUsableAfterwards(stack, start.supervisorPid);
  }, 150_000);

  it('status calls a running stack without its handoff not usable and says how to write it again; start does', async () => {
    stack = await makeStackHome();
    jsonResult(await lexecIn(stack.home, ['stack', 'start', '--json']));
    await rm(stack.paths.handoffFile);
    const broken = await status(stack);
    expect(broken).toMatchObject({ state: 'degraded', usable: false, handoff: { active: false } });
    expect(broken.next_step).toContain('lexec stack start --profile sandbox');
    const human = await lexecIn(stack.home, ['stack', 'status']);
    expect(human.stdout + human.stderr).toContain('usable: no (no active handoff)');

    jsonResult(await lexecIn(stack.home, ['stack', 'start', '--json']));
    expect(await status(stack)).toMatchObject({ state: 'running', usable: true });
    expect(JSON.parse(await readFile(stack.paths.handoffFile, 'utf8'))).toMatchObject({ supervisor_pid: broken.supervisor?.pid });
  }, 150_000);
});
