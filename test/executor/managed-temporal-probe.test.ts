import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { WorkflowEngineConfig } from '../../src/executor/config/executor-config-schema.js';
import { createWorkflowEngine, type ConfiguredEngine } from '../../src/executor/engine/create-workflow-engine.js';
import { readManagedTemporalState } from '../../src/executor/engine/temporal/managed-temporal-state.js';
import { createExecutionStore } from '../../src/executor/store/execution-store.js';
import { EXECUTOR_MIGRATIONS } from '../../src/executor/store/migrations/executor-migrations.js';
import { openDatabase } from '../../src/storage/open-database.js';
import { makeTempDir, removeDir } from '../support/cli.js';
import { freePorts } from '../support/free-ports.js';
import { PINNED_TEMPORAL_VERSION, temporalCli } from '../support/temporal.js';

/*
 * The engine over a managed Temporal server (managed_local), built in this process by the same
 * createWorkflowEngine `executor serve` uses: its address is lexec's own 127.0.0.1 port, which
 * served before the engine was built, so an engine that is away afterwards is the child exiting
 * (restarted by the server), never a setting to blame — unlike an external engine's
 * workflow_engine.address where nothing ever answered (temporal-engine.test.ts).
 */

const cli = temporalCli();

let dir: string;
let events: Record<string, unknown>[];
const engines: ConfiguredEngine[] = [];
const databases: { close(): void }[] = [];

beforeEach(async () => {
  dir = await makeTempDir('lexec-managed-probe-');
  events = [];
});

afterEach(async () => {
  for (const engine of engines.splice(0)) await engine.close();
  for (const db of databases.splice(0)) db.close();
  await removeDir(dir);
});

const logger = {
  info: (entry: Record<string, unknown>) => events.push({ level: 'info', ...entry }),
  warn: (entry: Record<string, unknown>) => events.push({ level: 'warn', ...entry }),
  error: (entry: Record<string, unknown>) => events.push({ level: 'error', ...entry }),
};

async function managedEngine(): Promise<{ engine: ConfiguredEngine; dataDir: string }> {
  const [port = 0, uiPort = 0] = await freePorts(2);
  const dataDir = join(dir, 'temporal');
  const config: WorkflowEngineConfig = { mode: 'managed_local', temporal_cli: { path: cli ?? '', version: PINNED_TEMPORAL_VERSION }, data_dir: dataDir, port, ui_port: uiPort, namespace: 'lexec' };
  const db = openDatabase(join(dir, 'executor.db'), EXECUTOR_MIGRATIONS);
  databases.push(db);
  const engine = await createWorkflowEngine(config, {
    db,
    store: createExecutionStore(db),
    // The worker is never started here: no phase runs.
    runActivity: () => Promise.reject(new Error('no phase runs in this test')),
    logger,
    onActivityError: () => undefined,
    installationId: '0123456789ab',
  });
  engines.push(engine);
  return { engine, dataDir };
}

describe.skipIf(cli === null)('the engine over a managed Temporal server', () => {
  it('a child killed right after the start fails the probe but blames no setting (no workflow_engine_setting_suspect for workflow_engine.address)', async () => {
    const { engine, dataDir } = await managedEngine();
    const running = await readManagedTemporalState(dataDir);
    expect(running).toMatchObject({ state: 'running', pid: expect.any(Number) as number });
    // Before any probe answered: the very sample an external engine's unreachable address is blamed on.
    process.kill(running?.pid ?? 0, 'SIGKILL');
    expect(await engine.probe({ timeoutMs: 5_000 })).toMatchObject({ outcome: 'error' });
    expect(events.filter((event) => event.event === 'workflow_engine_setting_suspect')).toEqual([]);
    // The server restarts its child; the engine answers again.
    await expect.poll(async () => (await engine.probe({ timeoutMs: 5_000 })).outcome, { timeout: 60_000, interval: 200 }).toBe('ok');
    expect(events.filter((event) => event.event === 'workflow_engine_setting_suspect')).toEqual([]);
    expect(events).toContainEqual(expect.objectContaining({ level: 'warn', event: 'temporal_server_exited', signal: 'SIGKILL' }));
  });
});
