import { spawn } from 'node:child_process';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { afterEach, describe, expect, it } from 'vitest';
import { isSameProcess, processStartTicks } from '../../../src/process/process-identity.js';
import { liveTemporalChild, takeDownStack } from '../../../src/launcher/supervisor/stack-processes.js';
import { profilePaths } from '../../../src/launcher/home/stack-home.js';
import { writeManagedTemporalState } from '../../../src/executor/engine/temporal/managed-temporal-state.js';
import { makeTempDir, removeDir } from '../../support/cli.js';
import { profileOnFreePorts, tableAt, writeProfile } from '../../support/example-profiles.js';
import { eventually, jsonResult, lexecIn, readState, recordedProcesses, stillRunning } from '../../support/stack-home.js';
import { PINNED_TEMPORAL_VERSION, startDevServer, temporalCli, untilPortOpen } from '../../support/temporal.js';

/*
 * The launcher with a managed Temporal (issue 11 item 7): a profile made from
 * profiles.example/managed-temporal.toml, the CLI path filled in as an operator would, through
 * doctor → start → run → status → logs → stop, with the real Temporal CLI; and the Temporal server
 * a killed executor leaves behind is ended by `stack stop`, never a process that merely reuses
 * its pid.
 */

const cli = temporalCli();
const homes: string[] = [];
const leftovers: { pid: number; startTicks: number | null }[] = [];

afterEach(async () => {
  for (const home of homes.splice(0)) {
    await lexecIn(home, ['stack', 'stop', '--profile', 'temporal', '--json']).catch(() => undefined);
    await removeDir(home);
  }
  for (const process of leftovers.splice(0)) if (await isSameProcess(process.pid, process.startTicks)) globalThis.process.kill(process.pid, 'SIGKILL');
});

async function temporalProfile(): Promise<{ home: string; ports: Readonly<Record<string, number>> }> {
  const home = await makeTempDir('lexec-stack-temporal-');
  homes.push(home);
  const { text, ports } = await profileOnFreePorts('managed-temporal', (table) => {
    tableAt(table, 'workflow_engine').temporal_cli = { path: cli ?? '', version: PINNED_TEMPORAL_VERSION };
  });
  await writeProfile(home, 'temporal', text);
  return { home, ports };
}

interface StatusJson {
  state: string;
  supervisor: unknown;
  components: { name: string; state: string; pid: number | null; port: number; ready: boolean | null; ui_url?: string; log_bytes: number }[];
  orphans: { component: string; pid: number }[];
}

describe.skipIf(cli === null)('a stack on a managed Temporal', () => {
  it('doctor, start, run, status, logs and stop work, and stop leaves no process', async () => {
    const { home, ports } = await temporalProfile();
    const temporalPort = ports.temporal ?? 0;
    const doctor = await lexecIn(home, ['stack', 'doctor', '--profile', 'temporal', '--json']);
    const checks = jsonResult<{ checks: { id: string; status: string; summary: string }[] }>(doctor).checks;
    const byId = new Map(checks.map((check) => [check.id, check]));
    expect(byId.get('temporal.cli')).toMatchObject({ status: 'pass' });
    expect(byId.get('temporal.cli')?.summary).toContain('1.5.1');
    expect(byId.get('ports.temporal.free')).toMatchObject({ status: 'pass' });
    expect(byId.get('ports.temporal_ui.free')).toMatchObject({ status: 'pass' });

    const start = await lexecIn(home, ['stack', 'start', '--profile', 'temporal', '--json']);
    expect(start.exitCode, start.stdout + start.stderr).toBe(0);
    const uiUrl = `http://127.0.0.1:${ports.temporal_ui ?? 0}`;
    // The start names the engine and its web UI, as status does (issue 26 item 9).
    expect(jsonResult<{ workflow_engine: unknown }>(start).workflow_engine).toEqual({ mode: 'managed_local', address: `grpc://127.0.0.1:${temporalPort}`, ui_url: uiUrl });
    const out = join(home, 'out');
    const run = jsonResult<{ execution: { execution_id: string; state: string }; spent: unknown }>(await lexecIn(home, ['run', 'a red fox', '--profile', 'temporal', '--out', out, '--json']));
    expect(run.execution.state).toBe('succeeded');
    const executionId = run.execution.execution_id;

    // The execution ran as a workflow on the stack's own Temporal server.
    const connection = await Connection.connect({ address: `127.0.0.1:${temporalPort}` });
    const handle = new Client({ connection }).workflow.getHandle(`lexec-execution-${executionId}`);
    await connection.withDeadline(Date.now() + 60_000, () => handle.result());
    await connection.close();

    const status = jsonResult<StatusJson>(await lexecIn(home, ['stack', 'status', '--profile', 'temporal', '--json']));
    expect(status.state).toBe('running');
    expect(status.components.map((component) => component.name)).toEqual(['ledger', 'executor', 'temporal', 'sandbox']);
    const temporal = status.components.find((component) => component.name === 'temporal');
    expect(temporal).toMatchObject({ state: 'running', port: temporalPort, ready: true, ui_url: `http://127.0.0.1:${ports.temporal_ui ?? 0}` });
    expect((await fetch(temporal?.ui_url ?? '')).status).toBe(200);
    const human = await lexecIn(home, ['stack', 'status', '--profile', 'temporal']);
    const engineLine = `workflow engine: Temporal server run by the executor at grpc://127.0.0.1:${temporalPort}; temporal web UI: ${uiUrl}`;
    expect(human.stdout).toContain(engineLine);
    const again = await lexecIn(home, ['stack', 'start', '--profile', 'temporal']);
    expect(again.stdout).toContain(engineLine);

    const logs = await lexecIn(home, ['stack', 'logs', '--profile', 'temporal', '--component', 'temporal', '--lines', '20', '--json']);
    expect(logs.exitCode, logs.stderr).toBe(0);
    expect(temporal?.log_bytes).toBeGreaterThan(0);

    const state = await readState(profilePaths(home, 'temporal'));
    const processes = [...recordedProcesses(state), { pid: temporal?.pid ?? 0, startTicks: await processStartTicks(temporal?.pid ?? 0), name: 'temporal' }];
    const stop = await lexecIn(home, ['stack', 'stop', '--profile', 'temporal', '--json']);
    expect(stop.exitCode, stop.stdout + stop.stderr).toBe(0);
    expect(await stillRunning(processes)).toEqual([]);
  }, 180_000);

  it('a Temporal server whose executor and supervisor were killed is an orphan that status shows and stop ends', async () => {
    const { home } = await temporalProfile();
    const start = await lexecIn(home, ['stack', 'start', '--profile', 'temporal', '--json']);
    expect(start.exitCode, start.stdout + start.stderr).toBe(0);
    const paths = profilePaths(home, 'temporal');
    const state = await readState(paths);
    const temporal = await liveTemporalChild(paths);
    if (temporal === null) throw new Error('no Temporal server recorded');
    leftovers.push(temporal);
    // An orphan dies of SIGPIPE at its first log line once its executor (which reads its output)
    // is gone, and on a loaded machine the server soon logs a warning. Stopped (SIGSTOP) it writes
    // nothing, so it stays the orphan this test is about; stop sends SIGCONT with its SIGTERM.
    process.kill(temporal.pid, 'SIGSTOP');
    // Both at once: no supervisor restarts the executor, no executor stops its Temporal server.
    process.kill(state.components.executor?.pid ?? 0, 'SIGKILL');
    process.kill(state.supervisor_pid, 'SIGKILL');
    const others = recordedProcesses(state).filter((entry) => entry.name !== 'executor' && entry.name !== 'supervisor');
    await eventually('the ledger and sandbox to stop after their supervisor died', async () => ((await stillRunning(others)).length === 0 ? true : undefined), 30_000);
    expect(await isSameProcess(temporal.pid, temporal.startTicks)).toBe(true);

    const status = jsonResult<StatusJson>(await lexecIn(home, ['stack', 'status', '--profile', 'temporal', '--json']));
    expect(status).toMatchObject({ state: 'degraded', supervisor: null, orphans: [{ component: 'temporal', pid: temporal.pid }] });
    const stop = jsonResult<{ orphans_stopped: { component: string; pid: number }[] }>(await lexecIn(home, ['stack', 'stop', '--profile', 'temporal', '--json']));
    expect(stop.orphans_stopped).toEqual([{ component: 'temporal', pid: temporal.pid }]);
    expect(await isSameProcess(temporal.pid, temporal.startTicks)).toBe(false);
  }, 180_000);
});

describe.skipIf(cli === null)('a stack on an external Temporal', () => {
  it('runs its executions on the cluster it names, shows it in status, and never stops it', async () => {
    const server = await startDevServer(cli ?? '');
    try {
      const home = await makeTempDir('lexec-stack-external-');
      homes.push(home);
      const { text } = await profileOnFreePorts('external-temporal', (table) => {
        tableAt(table, 'workflow_engine').address = server.url;
        tableAt(table, 'workflow_engine').ui_url = server.uiUrl;
      });
      await writeProfile(home, 'temporal', text);
      const doctor = jsonResult<{ checks: { id: string; status: string }[] }>(await lexecIn(home, ['stack', 'doctor', '--profile', 'temporal', '--json']));
      expect(doctor.checks.find((check) => check.id === 'temporal.external')).toMatchObject({ status: 'pass' });
      const start = await lexecIn(home, ['stack', 'start', '--profile', 'temporal', '--json']);
      expect(start.exitCode, start.stdout + start.stderr).toBe(0);
      const run = jsonResult<{ execution: { execution_id: string; state: string } }>(await lexecIn(home, ['run', 'a red fox', '--profile', 'temporal', '--out', join(home, 'out'), '--json']));
      expect(run.execution.state).toBe('succeeded');
      const connection = await Connection.connect({ address: server.address });
      const handle = new Client({ connection }).workflow.getHandle(`lexec-execution-${run.execution.execution_id}`);
      await connection.withDeadline(Date.now() + 60_000, () => handle.result());
      await connection.close();
      const status = jsonResult<StatusJson>(await lexecIn(home, ['stack', 'status', '--profile', 'temporal', '--json']));
      expect(status.components.map((component) => component.name)).toEqual(['ledger', 'executor', 'sandbox']);
      expect(jsonResult(await lexecIn(home, ['stack', 'stop', '--profile', 'temporal', '--json']))).toMatchObject({ outcome: 'stopped' });
      await untilPortOpen(server.port, 1_000);
    } finally {
      await server.stop();
    }
  }, 180_000);
});

describe('the Temporal server a stop ends', () => {
  it('is the very process recorded: a live process whose start time differs is never signalled', async () => {
    const home = await makeTempDir('lexec-stack-temporal-pid-');
    homes.push(home);
    const paths = profilePaths(home, 'temporal');
    const standIn = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' });
    const pid = standIn.pid ?? 0;
    const ticks = await processStartTicks(pid);
    leftovers.push({ pid, startTicks: ticks });
    const record = (startTicks: number | null) => {
      writeManagedTemporalState(paths.temporalDataDir, {
        state_version: 1,
        executor_pid: 1,
        executor_pid_start_ticks: null,
        pid,
        pid_start_ticks: startTicks,
        state: 'running',
        address: '127.0.0.1:1',
        ui_url: 'http://127.0.0.1:2',
        restarts: 0,
        started_at: new Date().toISOString(),
        last_exit: null,
      });
    };
    await mkdir(paths.temporalDataDir, { recursive: true });

    record((ticks ?? 0) + 1);
    expect(await liveTemporalChild(paths)).toBeNull();
    expect((await takeDownStack(paths, null, { boundMs: 1_000, orphanGraceMs: 1_000 })).orphans).toEqual([]);
    expect(await isSameProcess(pid, ticks)).toBe(true);

    record(ticks);
    const takedown = await takeDownStack(paths, null, { boundMs: 1_000, orphanGraceMs: 2_000 });
    expect(takedown.orphans).toEqual([{ component: 'temporal', pid, startTicks: ticks }]);
    expect(await isSameProcess(pid, ticks)).toBe(false);
  }, 120_000);
});
