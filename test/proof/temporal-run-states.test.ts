import { join } from 'node:path';
import { Client, Connection } from '@temporalio/client';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeTempDir, removeDir } from '../support/cli.js';
import { startDevServer, temporalCli, type DevServer } from '../support/temporal.js';
import { executionWorkflows, temporalRunStates, unsettledRuns, wronglyClosed, type TemporalRunStates } from './temporal-run-states.js';

/*
 * "At rest" on Temporal, as the crash matrix, the fault matrix and the randomized driver judge it
 * (temporal-run-states.ts), against a real dev server: a run still open is not at rest, nor one
 * the engine has never heard of; a run closed in any state other than COMPLETED is wrong — unless
 * the proof itself terminated it after its execution had reached its final state.
 */

const cli = temporalCli();
let temporal: DevServer;
let connection: Connection;
let client: Client;
let runs: TemporalRunStates;
let dir: string;

beforeAll(async () => {
  if (cli === null) return;
  temporal = await startDevServer(cli);
  connection = await Connection.connect({ address: temporal.address });
  client = new Client({ connection });
  runs = temporalRunStates(temporal.url);
  dir = await makeTempDir('lexec-run-states-');
}, 120_000);

afterAll(async () => {
  if (cli === null) return;
  await runs.close();
  await connection.close();
  await temporal.stop();
  await removeDir(dir);
});

/** An executor database holding just what the helpers read: each execution's workflow id, state and last change. */
function executorDatabase(name: string, rows: readonly { id: string; state: string; updatedAt: number }[]): string {
  const path = join(dir, `${name}.db`);
  const db = new Database(path);
  db.exec('CREATE TABLE executions (execution_id TEXT PRIMARY KEY, workflow_id TEXT NOT NULL, state TEXT NOT NULL, created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL)');
  for (const [index, row] of rows.entries()) db.prepare('INSERT INTO executions VALUES (?, ?, ?, ?, ?)').run(row.id, `wf-${row.id}`, row.state, index, row.updatedAt);
  db.close();
  return path;
}

/** A run nobody works on: started on a queue no worker polls, so it stays open until terminated. */
async function openRun(id: string): Promise<void> {
  await client.workflow.start('lexecExecution', { taskQueue: `nobody-${id}`, workflowId: `wf-${id}`, args: [{ execution_id: id, phase: 'submit_provider' }] });
}

describe.skipIf(cli === null)('runs at rest on a real Temporal server', () => {
  it('an open run, and an id with no run, are not at rest; once terminated, the run is closed', async () => {
    await openRun('open');
    const executions = executionWorkflows(executorDatabase('open', [{ id: 'open', state: 'running', updatedAt: 1 }, { id: 'never', state: 'pending', updatedAt: 1 }]));
    expect((await unsettledRuns(runs, executions)).map((state) => [state.workflowId, state.status])).toEqual([
      ['wf-open', 'RUNNING'],
      ['wf-never', 'NOT_FOUND'],
    ]);
    await client.workflow.getHandle('wf-open').terminate('test');
    expect((await unsettledRuns(runs, executions)).map((state) => state.workflowId)).toEqual(['wf-never']);
  });

  it('a run closed in a state other than COMPLETED is wrong, unless the proof terminated it after its execution was final', async () => {
    await openRun('late');
    await openRun('early');
    await client.workflow.getHandle('wf-late').terminate('test');
    await client.workflow.getHandle('wf-early').terminate('test');
    const [late, early] = await runs.of(['wf-late', 'wf-early']);
    const closedAt = late?.closedAtMs ?? 0;
    expect(closedAt).toBeGreaterThan(0);
    // `late`: final before its run closed (the termination came after the work); `early`: final after it.
    const executions = executionWorkflows(
      executorDatabase('closed', [
        { id: 'late', state: 'succeeded', updatedAt: closedAt - 1_000 },
        { id: 'early', state: 'succeeded', updatedAt: (early?.closedAtMs ?? 0) + 1_000 },
      ]),
    );
    const states = await runs.of(executions.map((execution) => execution.workflowId));
    // Not terminated by the proof: both wrong.
    expect(wronglyClosed(states, executions).map((state) => [state.workflowId, state.status])).toEqual([
      ['wf-late', 'TERMINATED'],
      ['wf-early', 'TERMINATED'],
    ]);
    // Terminated by the proof: only the one whose execution went on after its run closed.
    expect(wronglyClosed(states, executions, new Set(['wf-late', 'wf-early'])).map((state) => state.workflowId)).toEqual(['wf-early']);
  });

  it('an engine that does not answer is not a closed run', async () => {
    const away = temporalRunStates('127.0.0.1:1');
    try {
      const executions = executionWorkflows(executorDatabase('away', [{ id: 'x', state: 'running', updatedAt: 1 }]));
      expect((await unsettledRuns(away, executions)).map((state) => state.status)).toEqual(['UNREACHABLE']);
    } finally {
      await away.close();
    }
  }, 120_000);
});
