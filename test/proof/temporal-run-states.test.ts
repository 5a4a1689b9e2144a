import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeTempDir, removeDir } from '../support/cli.js';
import { connectedDevServer, temporalCli } from '../support/temporal.js';
import { executionWorkflows, temporalRunStates, unsettledRuns, wronglyClosed, type TemporalRunStates } from './temporal-run-states.js';

/*
 * "At rest" on Temporal, as the crash matrix, the fault matrix and the randomized driver judge it
 * (temporal-run-states.ts), against a real dev server: a run still open is not at rest, nor one
 * the engine has never heard of; a run closed in any state other than COMPLETED is wrong — unless
 * the proof itself terminated it and its execution needs no run any more (terminal, or parked with
 * its ledger record answered).
 */

const cli = temporalCli();
const dev = connectedDevServer(cli);
let runs: TemporalRunStates;
let dir: string;

beforeAll(async () => {
  if (cli === null) return;
  runs = temporalRunStates(dev.server.url);
  dir = await makeTempDir('lexec-run-states-');
});

afterAll(async () => {
  if (cli === null) return;
  await runs.close();
  await removeDir(dir);
});

/** An executor database holding just what the helpers read: each execution's workflow id, state and ledger record. */
function executorDatabase(name: string, rows: readonly { id: string; state: string; ledgerRecordAt?: number }[]): string {
  const path = join(dir, `${name}.db`);
  const db = new Database(path);
  db.exec('CREATE TABLE executions (execution_id TEXT PRIMARY KEY, workflow_id TEXT NOT NULL, state TEXT NOT NULL, created_at INTEGER NOT NULL, ledger_record_at INTEGER)');
  for (const [index, row] of rows.entries()) db.prepare('INSERT INTO executions VALUES (?, ?, ?, ?, ?)').run(row.id, `wf-${row.id}`, row.state, index, row.ledgerRecordAt ?? null);
  db.close();
  return path;
}

/** A run nobody works on: started on a queue no worker polls, so it stays open until terminated. */
async function openRun(id: string): Promise<void> {
  await dev.client.workflow.start('lexecExecution', { taskQueue: `nobody-${id}`, workflowId: `wf-${id}`, args: [{ execution_id: id, phase: 'submit_provider' }] });
}

describe.skipIf(cli === null)('runs at rest on a real Temporal server', () => {
  it('an open run, and an id with no run, are not at rest; once terminated, the run is closed', async () => {
    await openRun('open');
    const executions = executionWorkflows(executorDatabase('open', [{ id: 'open', state: 'running' }, { id: 'never', state: 'pending' }]));
    expect((await unsettledRuns(runs, executions)).map((state) => [state.workflowId, state.status])).toEqual([
      ['wf-open', 'RUNNING'],
      ['wf-never', 'NOT_FOUND'],
    ]);
    await dev.client.workflow.getHandle('wf-open').terminate('test');
    expect((await unsettledRuns(runs, executions)).map((state) => state.workflowId)).toEqual(['wf-never']);
  });

  it('a run closed in a state other than COMPLETED is wrong, unless the proof terminated it and its execution needs no run any more', async () => {
    const cases = [
      { id: 'done', state: 'succeeded' },
      // A termination during the last activity: it went on, released and failed the execution.
      { id: 'released', state: 'failed' },
      { id: 'answered', state: 'reconciliation', ledgerRecordAt: 1 },
      // Parked, its ledger record never answered: a run must still open it.
      { id: 'unanswered', state: 'reconciliation' },
      { id: 'underway', state: 'running' },
    ];
    for (const { id } of cases) await openRun(id);
    for (const { id } of cases) await dev.client.workflow.getHandle(`wf-${id}`).terminate('test');
    const executions = executionWorkflows(executorDatabase('closed', cases));
    const states = await runs.of(executions.map((execution) => execution.workflowId));
    expect(states.map((state) => state.status)).toEqual(cases.map(() => 'TERMINATED'));
    // Not terminated by the proof: all wrong.
    expect(wronglyClosed(states, executions).map((state) => state.workflowId)).toEqual(cases.map(({ id }) => `wf-${id}`));
    // Terminated by the proof: only those whose execution still needs a run.
    expect(wronglyClosed(states, executions, new Set(cases.map(({ id }) => `wf-${id}`))).map((state) => state.workflowId)).toEqual(['wf-unanswered', 'wf-underway']);
  });

  it('an engine that does not answer is not a closed run', async () => {
    const away = temporalRunStates('127.0.0.1:1');
    try {
      const executions = executionWorkflows(executorDatabase('away', [{ id: 'x', state: 'running' }]));
      expect((await unsettledRuns(away, executions)).map((state) => state.status)).toEqual(['UNREACHABLE']);
    } finally {
      await away.close();
    }
  }, 120_000);
});
