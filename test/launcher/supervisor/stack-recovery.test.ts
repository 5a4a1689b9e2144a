import { readFile, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { canListen } from '../../../src/process/port-probe.js';
import { isSameProcess } from '../../../src/process/process-identity.js';
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
  type StackHome,
} from '../../support/stack-home.js';

/*
 * When things go wrong for real: a component that cannot become ready (exit 4 with its last
 * probe error and log lines, and nothing left running), a supervisor killed with SIGKILL (its
 * children stop by themselves; one that cannot is an orphan that stop and start end).
 */

interface StatusJson {
  state: string;
  supervisor: unknown;
  orphans: { component: string; pid: number }[];
}

let stack: StackHome;

beforeAll(async () => {
  stack = await makeStackHome();
});

afterAll(async () => {
  await destroyStackHome(stack);
});

async function startReady(): Promise<void> {
  const run = await lexecIn(stack.home, ['stack', 'start', '--json']);
  expect(run.exitCode, run.stderr).toBe(0);
}

describe('stack runtime recovery', () => {
  it('a SIGKILLed supervisor: its children stop by themselves; a child that cannot (SIGSTOPped) is an orphan that stop ends', async () => {
    await startReady();
    const state = await readState(stack.paths);
    const pid = (component: 'ledger' | 'executor' | 'sandbox') => state.components[component]?.pid ?? 0;
    // A stopped process cannot react to anything but SIGKILL: it stands for a child that hangs.
    process.kill(pid('executor'), 'SIGSTOP');
    process.kill(state.supervisor_pid, 'SIGKILL');

    const others = recordedProcesses(state).filter((entry) => entry.name === 'ledger' || entry.name === 'sandbox');
    await eventually('the ledger and sandbox to stop after their supervisor died', async () => ((await stillRunning(others)).length === 0 ? true : undefined), 30_000);
    expect(await isSameProcess(pid('executor'), state.components.executor?.pid_start_ticks ?? null)).toBe(true);

    const status = jsonResult<StatusJson>(await lexecIn(stack.home, ['stack', 'status', '--json']));
    expect(status).toMatchObject({ state: 'degraded', supervisor: null, orphans: [{ component: 'executor', pid: pid('executor') }] });

    const stop = await lexecIn(stack.home, ['stack', 'stop', '--json']);
    expect(stop.exitCode, stop.stderr).toBe(0);
    expect(jsonResult(stop)).toMatchObject({ outcome: 'stopped', supervisor_pid: null, orphans_stopped: [{ component: 'executor', pid: pid('executor') }] });
    expect(await stillRunning(recordedProcesses(state))).toEqual([]);
    for (const port of Object.values(stack.ports)) expect(await canListen(port), `port ${port}`).toBe(true);
    expect(jsonResult<StatusJson>(await lexecIn(stack.home, ['stack', 'status', '--json'])).state).toBe('stopped');
  });

  it('a start after a SIGKILLed supervisor ends the orphan it left and starts the stack again', async () => {
    await startReady();
    const state = await readState(stack.paths);
    const executor = state.components.executor?.pid ?? 0;
    process.kill(executor, 'SIGSTOP');
    process.kill(state.supervisor_pid, 'SIGKILL');
    await eventually('the supervisor to be gone', async () => (!(await isSameProcess(state.supervisor_pid, state.supervisor_pid_start_ticks)) ? true : undefined), 10_000, 20);

    const agentCapability = await readFile(stack.paths.agentCapability, 'utf8');
    const approverCapability = await readFile(stack.paths.approverCapability, 'utf8');
    const run = await lexecIn(stack.home, ['stack', 'start', '--json']);
    expect(run.exitCode, run.stderr).toBe(0);
    const started = jsonResult<{ outcome: string; orphans_stopped: number; supervisor_pid: number; agent: { agent_id: string } }>(run);
    // The local agent and its credentials are reused, not made again.
    expect(started.agent.agent_id).toBe(state.agent?.agent_id);
    expect(await readFile(stack.paths.agentCapability, 'utf8')).toBe(agentCapability);
    expect(await readFile(stack.paths.approverCapability, 'utf8')).toBe(approverCapability);
    const provisioned = (await readFile(join(stack.paths.logsDir, 'supervisor.log'), 'utf8'))
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as Record<string, unknown>)
      .filter((event) => event.event === 'local_credentials_ready')
      .at(-1);
    expect(provisioned).toMatchObject({ agent: 'reused', agent_credential: 'reused', approver_credential: 'reused' });
    expect(started.outcome).toBe('started');
    expect(started.orphans_stopped).toBeGreaterThanOrEqual(1);
    expect(started.supervisor_pid).not.toBe(state.supervisor_pid);
    expect(await stillRunning(recordedProcesses(state))).toEqual([]);
    expect((await fetch(`http://127.0.0.1:${stack.ports.executor}/readyz`)).status).toBe(200);

    const stop = await lexecIn(stack.home, ['stack', 'stop', '--json']);
    expect(stop.exitCode, stop.stderr).toBe(0);
  });

  it('a component that cannot become ready: exit 4 naming it, its last probe error and its last log lines; nothing is left running', async () => {
    // A ledger whose admin capability file is gone refuses to start (its database holds an
    // admin credential): a real, operator-made failure that waiting cannot fix.
    await rename(stack.paths.ledgerAdminCapability, `${stack.paths.ledgerAdminCapability}.moved`);
    const run = await lexecIn(stack.home, ['stack', 'start', '--json', '--timeout', '5']);
    expect(run.exitCode, run.stderr).toBe(4);
    const error = jsonError(run);
    expect(error.code).toBe('readiness_timeout');
    expect(error.message).toContain('The ledger of profile "sandbox" did not become ready within 5 s');
    expect(error.message).toMatch(/last probe \(GET \/health → 200\): |the process had exited/);
    expect(error.message).toContain(`Last lines of ${stack.paths.logsDir}/ledger.log:`);
    expect(error.message).toContain('admin capability file');
    expect(error.next_step).toContain('What was started has been stopped');
    expect(run.stderr).toContain('stopping what was started');

    const state = await readState(stack.paths);
    expect(await stillRunning(recordedProcesses(state))).toEqual([]);
    expect(jsonResult<StatusJson>(await lexecIn(stack.home, ['stack', 'status', '--json'])).state).toBe('stopped');
    for (const port of Object.values(stack.ports)) expect(await canListen(port), `port ${port}`).toBe(true);

    // Put back, the same stack starts again.
    await rename(`${stack.paths.ledgerAdminCapability}.moved`, stack.paths.ledgerAdminCapability);
    await startReady();
    expect(jsonResult(await lexecIn(stack.home, ['stack', 'stop', '--json']))).toMatchObject({ outcome: 'stopped' });
  });

  it('a profile edited since its generation was activated: start says so and starts the active generation, never a new one', async () => {
    const active = (await readFile(stack.paths.activeFile, 'utf8')).trim();
    const source = await readFile(stack.paths.source, 'utf8');
    await writeFile(stack.paths.source, source.replace(/^complete_after_ms = 300$/m, 'complete_after_ms = 900'));
    const run = await lexecIn(stack.home, ['stack', 'start', '--json']);
    expect(run.exitCode, run.stderr).toBe(0);
    const started = jsonResult<{ generation_id: string; profile_drift: { kind: string; rendered_generation_id: string; affected_components: string[] } }>(run);
    expect(started.generation_id).toBe(active);
    expect(started.profile_drift).toMatchObject({ kind: 'renders_differently' });
    expect(started.profile_drift.rendered_generation_id).not.toBe(active);
    expect(started.profile_drift.affected_components).toContain('sandbox');
    expect(run.stderr).toContain(`not the active ${active}, which is started as it is`);
    expect((await readFile(stack.paths.activeFile, 'utf8')).trim()).toBe(active);
  });
});
