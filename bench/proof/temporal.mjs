// What the randomized proof runs (bench/proof/driver.mjs; docs/reliability.md "Randomized runs")
// do with Temporal themselves: run the `temporal server start-dev` two stacks share (the stand-in
// for an external cluster: started, killed and started again by the driver, never by lexec),
// terminate an execution's workflow run as an operator would, and tell whether every run has come
// to rest (test/proof/temporal-run-states.ts: open runs, runs closed in a wrong state).
import { spawn } from 'node:child_process';
import { connect } from 'node:net';
import { join } from 'node:path';
import { Client, Connection, WorkflowNotFoundError } from '@temporalio/client';
import Database from 'better-sqlite3';
import { executionWorkflows, temporalRunStates, unsettledRuns, wronglyClosed } from '../../test/proof/temporal-run-states.ts';

const sleep = (ms) => new Promise((done) => setTimeout(done, ms));

async function untilPortOpen(port, timeoutMs) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const open = await new Promise((done) => {
      const socket = connect({ host: '127.0.0.1', port });
      socket.once('connect', () => {
        socket.destroy();
        done(true);
      });
      socket.once('error', () => done(false));
    });
    if (open) return;
    if (Date.now() > deadline) throw new Error(`the Temporal dev server did not listen on 127.0.0.1:${port} within ${timeoutMs} ms`);
    await sleep(100);
  }
}

/**
 * A `temporal server start-dev` on `port` (its UI on `uiPort`, its HTTP API and metrics on
 * `httpPort` and `metricsPort`: every port it binds is one the caller reserved, never a default
 * another run's server may hold) keeping its history in
 * `<dir>/temporal.db`, so that a kill and a start again lose nothing. `kill()` SIGKILLs it (as a
 * crash would) and answers whether it was running; `start()` starts it again; `stop()` ends it.
 */
export async function startDevServer({ cli, dir, port, uiPort, httpPort, metricsPort }) {
  let child = null;
  const start = async () => {
    const args = ['server', 'start-dev', '--ip', '127.0.0.1', '--port', String(port), '--ui-port', String(uiPort), '--headless', '--log-level', 'error'];
    args.push('--http-port', String(httpPort), '--metrics-port', String(metricsPort), '--disable-config-env', '--disable-config-file', '--db-filename', join(dir, 'temporal.db'));
    const started = spawn(cli, args, { stdio: 'ignore', env: { PATH: process.env.PATH ?? '', HOME: dir } });
    child = started;
    started.once('exit', () => {
      if (child === started) child = null;
    });
    await untilPortOpen(port, 60_000);
  };
  const end = async (signal) => {
    const running = child;
    child = null;
    if (running === null || running.exitCode !== null || running.signalCode !== null) return false;
    const exited = new Promise((done) => running.once('exit', done));
    running.kill(signal);
    const hard = setTimeout(() => running.kill('SIGKILL'), 5_000);
    await exited;
    clearTimeout(hard);
    return true;
  };
  await start();
  return { address: `127.0.0.1:${port}`, uiUrl: `http://127.0.0.1:${uiPort}`, pid: () => child?.pid ?? null, start, kill: () => end('SIGKILL'), stop: () => end('SIGTERM') };
}

/**
 * The workflow id of scheduled execution `index` (its agent's prompt names it; an agent that
 * started afresh made a newer one: the newest), or null while none is admitted.
 */
function workflowOfScheduled(executorDatabase, index) {
  let db;
  try {
    db = new Database(executorDatabase, { readonly: true, fileMustExist: true });
    const row = db
      .prepare("SELECT workflow_id FROM executions WHERE json_extract(request_json, '$.input.prompt') LIKE ? ORDER BY created_at DESC LIMIT 1")
      .get(`proof ${index}: %`);
    return row?.workflow_id ?? null;
  } catch {
    return null;
  } finally {
    db?.close();
  }
}

/**
 * Terminates the current run of scheduled execution `index`, as an operator in the Temporal UI
 * would. Waits up to 15 s for the execution to be admitted and its run started (kills of the
 * ledger or the executor may hold its admission up). Answers the outcome — `terminated`;
 * `no_execution` (none admitted in time); `not_running` (its run had closed: the work was done);
 * `unreachable` (the engine did not answer) — and `at`, the `clock()` when it was asked.
 */
export async function terminateScheduled({ address, executorDatabase, index, clock }) {
  const connection = Connection.lazy({ address });
  const client = new Client({ connection });
  try {
    let workflowId = null;
    for (const deadline = Date.now() + 15_000; Date.now() < deadline; await sleep(100)) {
      workflowId = workflowOfScheduled(executorDatabase, index);
      if (workflowId === null) continue;
      // Under way, or closed already (then the termination finds nothing to end); not started yet, or the engine away: wait.
      const described = await connection.withDeadline(Date.now() + 5_000, () => client.workflow.getHandle(workflowId).describe()).catch(() => null);
      if (described !== null) break;
    }
    const at = clock();
    if (workflowId === null) return { outcome: 'no_execution', workflowId: null, at };
    try {
      await connection.withDeadline(Date.now() + 5_000, () => client.workflow.getHandle(workflowId).terminate('proof driver: an operator terminated the run'));
      return { outcome: 'terminated', workflowId, at };
    } catch (error) {
      return { outcome: error instanceof WorkflowNotFoundError ? 'not_running' : 'unreachable', workflowId, at };
    }
  } finally {
    await connection.close().catch(() => undefined);
  }
}

/** The engine's word on every run of the given executor databases, asked over one connection. */
export function runsAtRest(address) {
  const runs = temporalRunStates(address);
  return {
    /** Runs still open (or unknown) across the databases: empty once every run has closed. */
    async open(executorDatabases) {
      const open = [];
      for (const database of executorDatabases) open.push(...(await unsettledRuns(runs, executionWorkflows(database))));
      return open;
    },
    /** Runs closed in a wrong state (a run the driver terminated after its work was done may stay TERMINATED). */
    async wronglyClosed(executorDatabases, terminated) {
      const wrong = [];
      for (const database of executorDatabases) {
        const executions = executionWorkflows(database);
        wrong.push(...wronglyClosed(await runs.of(executions.map((execution) => execution.workflowId)), executions, terminated));
      }
      return wrong;
    },
    close: () => runs.close(),
  };
}
