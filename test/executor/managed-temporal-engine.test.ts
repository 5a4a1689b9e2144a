import { existsSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { describe, expect, it } from 'vitest';
import { readManagedTemporalState, type ManagedTemporalState } from '../../src/executor/engine/temporal/managed-temporal-state.js';
import { isSameProcess } from '../../src/process/process-identity.js';
import { runLexec } from '../support/cli.js';
import { durableHarness, engineSection, until, type Stack } from '../support/durable-stack.js';
import { freePorts } from '../support/free-ports.js';
import { PINNED_TEMPORAL_VERSION, temporalCli } from '../support/temporal.js';

/*
 * managed_local between real processes (issue 11): `lexec executor serve` starts the pinned
 * Temporal CLI itself (`temporal server start-dev` on loopback, its history in data_dir),
 * supervises it and stops only it. The Temporal child and the executor are each SIGKILLed at the
 * point in question; nothing is lost, nothing is submitted twice, and no process is left behind.
 */

const cli = temporalCli();
const harness = durableHarness('lexec-managed-');

async function managedStack(options: Parameters<typeof harness.stack>[0] = {}): Promise<Stack & { port: number; uiPort: number; dataDir: string }> {
  const [port = 0, uiPort = 0] = await freePorts(2);
  const s = await harness.stack({ engine: { mode: 'managed_local', cli: cli ?? '', version: PINNED_TEMPORAL_VERSION, port, uiPort }, ...options });
  return Object.assign(s, { port, uiPort, dataDir: join(harness.dir(), 'executor', 'temporal') });
}

async function engineState(dataDir: string): Promise<ManagedTemporalState> {
  const state = await readManagedTemporalState(dataDir);
  if (state === null) throw new Error('no server.json');
  return state;
}


/** The workflow's status once it closed (its last workflow task may follow the execution's end by a moment). */
async function closedStatus(port: number, workflowId: string): Promise<string> {
  const connection = await Connection.connect({ address: `127.0.0.1:${port}` });
  try {
    const handle = new Client({ connection }).workflow.getHandle(workflowId);
    await connection.withDeadline(Date.now() + 60_000, () => handle.result());
    return (await handle.describe()).status.name;
  } finally {
    await connection.close();
  }
}

describe.skipIf(cli === null)('the executor runs its own Temporal server (managed_local)', () => {
  it('starts the pinned CLI on loopback, runs executions on it, and at SIGTERM drains, stops only its child, and keeps the history for the next start', async () => {
    const s = await managedStack();
    const running = await engineState(s.dataDir);
    expect(running).toMatchObject({ state: 'running', address: `127.0.0.1:${s.port}`, ui_url: `http://127.0.0.1:${s.uiPort}`, executor_pid: expect.any(Number) as number });
    expect(await isSameProcess(running.pid ?? 0, running.pid_start_ticks)).toBe(true);
    expect((await fetch(`http://127.0.0.1:${s.uiPort}/`)).status).toBe(200);
    expect(existsSync(join(s.dataDir, 'temporal.db'))).toBe(true);
    expect(existsSync(join(harness.dir(), 'executor', 'logs', 'temporal.log'))).toBe(true);

    const tokenId = await s.approvedToken();
    const executionId = await s.submit(tokenId, 1);
    await s.waitFor(executionId, 'success', (e) => e.state === 'succeeded');
    expect((await s.authorization(tokenId)).status).toBe('settled');

    expect(await s.executor.kill('SIGTERM')).toBe(0);
    const order = s.executor.events().map((event) => event.event);
    const at = (name: string) => order.indexOf(name);
    expect(at('executor_stopping')).toBeGreaterThan(-1);
    expect(at('executor_stopping')).toBeLessThan(at('temporal_server_stopped'));
    expect(at('temporal_server_stopped')).toBeLessThan(at('executor_stopped'));
    expect(await isSameProcess(running.pid ?? 0, running.pid_start_ticks)).toBe(false);
    expect(await engineState(s.dataDir)).toMatchObject({ state: 'stopped', pid: null });

    await s.restart();
    expect(await closedStatus(s.port, `lexec-execution-${executionId}`)).toBe('COMPLETED');
  }, 120_000);

  it('a SIGKILLed Temporal child withdraws readiness, is restarted, and the execution under way finishes once', async () => {
    const s = await managedStack({ sandboxArgs: ['--complete-after-ms', '5000'] });
    const tokenId = await s.approvedToken();
    const executionId = await s.submit(tokenId, 1);
    await s.waitFor(executionId, 'checkpoint', (e) => e.provider_attempts[0]?.checkpointed === true);
    const first = await engineState(s.dataDir);
    process.kill(first.pid ?? 0, 'SIGKILL');
    await until('readiness withdrawn', async () => ((await fetch(`${s.executor.url()}/readyz`)).status === 503 ? true : undefined));
    const restarted = await until('the child restarted', async () => {
      const state = await engineState(s.dataDir);
      return state.state === 'running' && state.pid !== first.pid ? state : undefined;
    });
    expect(restarted).toMatchObject({ restarts: 1, last_exit: { signal: 'SIGKILL' } });
    await until('ready again', async () => ((await fetch(`${s.executor.url()}/readyz`)).status === 200 ? true : undefined), 30_000);
    const execution = await s.waitFor(executionId, 'success', (e) => e.state === 'succeeded', 40_000);
    expect(execution.provider_attempts).toHaveLength(1);
    expect(await s.sandbox.submissions()).toHaveLength(1);
    expect((await s.authorization(tokenId)).status).toBe('settled');
  }, 120_000);

  it('a SIGKILLed executor mid-poll: the next start stops the Temporal child left behind, and the same workflow finishes with one submission and one settlement', async () => {
    const s = await managedStack({ sandboxArgs: ['--complete-after-ms', '4000'] });
    const tokenId = await s.approvedToken();
    const executionId = await s.submit(tokenId, 1);
    await s.waitFor(executionId, 'checkpoint', (e) => e.provider_attempts[0]?.checkpointed === true);
    const orphan = await engineState(s.dataDir);
    await s.executor.kill('SIGKILL');
    await s.restart();
    expect(await isSameProcess(orphan.pid ?? 0, orphan.pid_start_ticks)).toBe(false);
    const execution = await s.waitFor(executionId, 'success', (e) => e.state === 'succeeded', 40_000);
    expect(execution.provider_attempts).toHaveLength(1);
    expect(await s.sandbox.submissions()).toHaveLength(1);
    expect(await s.authorization(tokenId)).toMatchObject({ status: 'settled', settlement: { amount_units: '3000' } });
    expect(await closedStatus(s.port, `lexec-execution-${executionId}`)).toBe('COMPLETED');
  }, 120_000);

  it('a CLI that does not report the pinned version is refused with the field to fix, and nothing is started', async () => {
    const s = await harness.stack();
    await s.executor.kill('SIGTERM');
    const [port = 0, uiPort = 0] = await freePorts(2);
    const config = JSON.parse(await readFile(s.configPath, 'utf8')) as Record<string, unknown>;
    config.workflow_engine = engineSection({ mode: 'managed_local', cli: cli ?? '', version: '1.4.1', port, uiPort }, harness.dir());
    await writeFile(s.configPath, JSON.stringify(config));
    const run = await runLexec(['executor', 'serve', '--config', s.configPath, '--json'], { home: harness.dir() });
    expect(run.exitCode).toBe(1);
    const error = (JSON.parse(run.stdout) as { error: { code: string; issues: { path: string; message: string }[] } }).error;
    expect(error.code).toBe('temporal_cli_version_mismatch');
    expect(error.issues.map((issue) => issue.path)).toEqual(['workflow_engine.temporal_cli.version']);
    expect(error.issues[0]?.message).toContain('1.5.1');
    expect(existsSync(join(harness.dir(), 'executor', 'temporal', 'temporal.db'))).toBe(false);
  }, 120_000);
});
