import { readdir, readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { handoffSchema } from '../../../src/launcher/handoff/handoff.js';
import { canListen } from '../../../src/process/port-probe.js';
import { ANSI } from '../../support/cli.js';
import {
  destroyStackHome,
  eventually,
  jsonResult,
  lexecIn,
  makeStackHome,
  readState,
  recordedProcesses,
  stillRunning,
  storedCapabilities,
  type StackHome,
} from '../../support/stack-home.js';

/*
 * One real stack, driven through its life: fresh start to ready, status, a second start, a
 * crashed executor restarted by the supervisor, stop leaving nothing behind.
 */

interface StartJson {
  profile: string;
  generation_id: string;
  outcome: string;
  supervisor_pid: number;
  components: { name: string; pid: number; port: number; endpoint: string }[];
  agent: { name: string; agent_id: string };
  handoff_file: string;
  generation_activated: boolean;
  elapsed_ms: number;
}

interface StatusJson {
  profile: string;
  state: string;
  generation_id: string | null;
  supervisor: { pid: number; phase: string } | null;
  components: { name: string; state: string; pid: number | null; port: number; uptime_ms: number | null; restarts: number; ready: boolean | null; log_bytes: number }[];
  orphans: unknown[];
}

let stack: StackHome;
const outputs: string[] = [];

beforeAll(async () => {
  stack = await makeStackHome();
});

afterAll(async () => {
  await destroyStackHome(stack);
});

describe('stack start, status, restart and stop on real processes', () => {
  let started: StartJson;

  it('starts a fresh profile to ready: every component answers, the handoff is written privately', async () => {
    const run = await lexecIn(stack.home, ['stack', 'start', '--json']);
    outputs.push(run.stdout, run.stderr);
    expect(run.exitCode, run.stderr).toBe(0);
    started = jsonResult<StartJson>(run);
    expect(started).toMatchObject({ profile: 'sandbox', outcome: 'started', generation_activated: true, agent: { name: 'local' } });
    expect(started.components.map((component) => [component.name, component.port])).toEqual([
      ['ledger', stack.ports.ledger],
      ['executor', stack.ports.executor],
      ['sandbox', stack.ports.sandbox],
    ]);
    expect((await fetch(`http://127.0.0.1:${stack.ports.ledger}/health`)).status).toBe(200);
    expect((await fetch(`http://127.0.0.1:${stack.ports.executor}/readyz`)).status).toBe(200);
    expect((await fetch(`http://127.0.0.1:${stack.ports.sandbox}/__sandbox/health`)).status).toBe(200);
    // Progress went to stderr as plain lines (not a terminal), stdout holds only the document.
    expect(run.stderr).toContain('✔ executor ready');
    expect(run.stdout.trim().split('\n')).toHaveLength(1);

    const handoff = handoffSchema.parse(JSON.parse(await readFile(stack.paths.handoffFile, 'utf8')));
    expect((await stat(stack.paths.handoffFile)).mode & 0o777).toBe(0o600);
    expect(handoff).toMatchObject({
      profile: 'sandbox',
      generation_id: started.generation_id,
      supervisor_pid: started.supervisor_pid,
      ledger: { endpoint: `http://127.0.0.1:${stack.ports.ledger}` },
      executor: { endpoint: `http://127.0.0.1:${stack.ports.executor}` },
      agent: started.agent,
    });
    for (const file of Object.values(handoff.credentials)) expect((await stat(file)).mode & 0o777, file).toBe(0o600);
    for (const dir of [stack.paths.credentialsDir, stack.paths.executorCredentialsDir, stack.paths.logsDir]) expect((await stat(dir)).mode & 0o777, dir).toBe(0o700);
    for (const log of await readdir(stack.paths.logsDir)) expect((await stat(join(stack.paths.logsDir, log))).mode & 0o777, log).toBe(0o600);

    // The agent credential works: the agent can read its (empty) authorization of another id as not found, not 401.
    const agentToken = (await readFile(handoff.credentials.agent ?? '', 'utf8')).trim();
    const probe = await fetch(`${handoff.ledger.endpoint}/authorizations/00000000-0000-4000-8000-000000000000`, { headers: { authorization: `Bearer ${agentToken}` } });
    expect(probe.status).toBe(404);
  });

  it('reports a running stack with status --json (every component running, ready, with pid, port, uptime, restarts, log size)', async () => {
    const run = await lexecIn(stack.home, ['stack', 'status', '--json']);
    outputs.push(run.stdout, run.stderr);
    expect(run.exitCode).toBe(0);
    const status = jsonResult<StatusJson>(run);
    expect(status).toMatchObject({ profile: 'sandbox', state: 'running', generation_id: started.generation_id, supervisor: { pid: started.supervisor_pid, phase: 'running' }, orphans: [] });
    expect(status.components.map((component) => component.name)).toEqual(['ledger', 'executor', 'sandbox']);
    for (const component of status.components) {
      expect(component).toMatchObject({ state: 'running', ready: true, restarts: 0 });
      expect(component.pid).toBe(started.components.find((entry) => entry.name === component.name)?.pid);
      expect(component.uptime_ms).toBeGreaterThanOrEqual(0);
    }
    expect(status.components.find((component) => component.name === 'ledger')?.log_bytes).toBeGreaterThan(0);

    const human = await lexecIn(stack.home, ['stack', 'status']);
    expect(human.exitCode).toBe(0);
    expect(human.stderr).toBe('');
    expect(human.stdout).toMatch(/profile sandbox: running/);
    expect(human.stdout).not.toMatch(ANSI);
  });

  it('treats a second start of the running, unchanged stack as a no-op (exit 0, already_running, same processes)', async () => {
    const before = await readFile(stack.paths.handoffFile, 'utf8');
    const run = await lexecIn(stack.home, ['stack', 'start', '--json']);
    outputs.push(run.stdout, run.stderr);
    expect(run.exitCode, run.stderr).toBe(0);
    const again = jsonResult<StartJson>(run);
    expect(again).toMatchObject({ outcome: 'already_running', supervisor_pid: started.supervisor_pid, generation_id: started.generation_id });
    expect(again.components).toEqual(started.components);
    expect(await readFile(stack.paths.handoffFile, 'utf8')).toBe(before);
  });

  it('restarts a crashed child: SIGKILL the executor, the supervisor starts a new one (restarts 1) and the stack is ready again', async () => {
    const executorPid = started.components.find((component) => component.name === 'executor')?.pid ?? 0;
    process.kill(executorPid, 'SIGKILL');
    const status = await eventually('the executor restarted and ready', async () => {
      const current = jsonResult<StatusJson>(await lexecIn(stack.home, ['stack', 'status', '--json']));
      const executor = current.components.find((component) => component.name === 'executor');
      return current.state === 'running' && executor?.restarts === 1 && executor.ready === true ? current : undefined;
    });
    const executor = status.components.find((component) => component.name === 'executor');
    expect(executor?.pid).not.toBe(executorPid);
    expect(status.supervisor?.pid).toBe(started.supervisor_pid);
    const state = await readState(stack.paths);
    expect(state.components.executor).toMatchObject({ state: 'running', restarts: 1, last_exit: { code: null, signal: 'SIGKILL' } });
    // Other children were left alone.
    expect(state.components.ledger?.restarts).toBe(0);
    const supervisorLog = await readFile(join(stack.paths.logsDir, 'supervisor.log'), 'utf8');
    expect(supervisorLog).toMatch(/"event":"child_exited","component":"executor"/);
  });

  it('writes no capability to stdout, stderr, the logs, supervisor.json or the handoff', async () => {
    const secrets = await storedCapabilities(stack.paths);
    expect(secrets.length).toBeGreaterThanOrEqual(6);
    const texts = [...outputs, await readFile(stack.paths.supervisorState, 'utf8'), await readFile(stack.paths.handoffFile, 'utf8')];
    for (const log of await readdir(stack.paths.logsDir)) texts.push(await readFile(join(stack.paths.logsDir, log), 'utf8'));
    for (const text of texts) {
      for (const secret of secrets) expect(text.includes(secret)).toBe(false);
      expect(text).not.toMatch(/lexec_[a-z]+_[A-Za-z0-9_-]{43}/);
    }
  });

  it('stops in reverse order leaving no recorded process and no busy port; the handoff is withdrawn', async () => {
    const recorded = recordedProcesses(await readState(stack.paths));
    expect(recorded).toHaveLength(4);
    const run = await lexecIn(stack.home, ['stack', 'stop', '--json']);
    expect(run.exitCode, run.stderr).toBe(0);
    expect(jsonResult(run)).toMatchObject({ outcome: 'stopped', supervisor_pid: started.supervisor_pid, forced: false, orphans_stopped: [], handoff_withdrawn: true, ports_busy: [] });
    expect(await stillRunning(recorded)).toEqual([]);
    for (const port of Object.values(stack.ports)) expect(await canListen(port), `port ${port}`).toBe(true);
    await expect(stat(stack.paths.handoffFile)).rejects.toThrow();

    const events = (await readFile(join(stack.paths.logsDir, 'supervisor.log'), 'utf8'))
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { event: string; component?: string });
    const stopped = events.filter((event) => event.event === 'child_stopped').map((event) => event.component);
    expect(stopped.indexOf('ledger')).toBe(2);
    const state = await readState(stack.paths);
    expect(state.phase).toBe('stopped');
    for (const component of Object.values(state.components)) expect(component).toMatchObject({ state: 'stopped', pid: null });
  });

  it('reports the stopped stack (exit 0, state stopped) and stops a stopped stack without complaint', async () => {
    const status = jsonResult<StatusJson>(await lexecIn(stack.home, ['stack', 'status', '--json']));
    expect(status).toMatchObject({ state: 'stopped', supervisor: null, generation_id: started.generation_id, orphans: [] });
    for (const component of status.components) expect(component).toMatchObject({ state: 'stopped', pid: null, ready: null, uptime_ms: null });
    const again = await lexecIn(stack.home, ['stack', 'stop', '--json']);
    expect(again.exitCode).toBe(0);
    expect(jsonResult(again)).toMatchObject({ outcome: 'already_stopped', supervisor_pid: null, handoff_withdrawn: false });
  });
});
