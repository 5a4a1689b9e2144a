import { randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { WorkflowFailedError } from '@temporalio/client';
import { ActivityFailure, ApplicationFailure } from '@temporalio/common';
import { describe, expect, it } from 'vitest';
import { CRASH_FILE_ENV } from '../../src/crash-points.js';
import { correlationOf } from '../../src/executor/domain/correlation.js';
import { executionIdFor } from '../../src/executor/domain/execution-states.js';
import { RESCHEDULE_INTERVAL_ENV } from '../../src/executor/engine/development-reschedule-interval.js';
import { countRescheduledRuns } from '../../src/launcher/status/executor-database.js';
import { executionRequest } from '../support/executor.js';
import { durableHarness, until, type Stack } from '../support/durable-stack.js';
import { call } from '../support/ledger.js';
import { connectedDevServer, temporalCli } from '../support/temporal.js';

/*
 * Executors sharing one real Temporal server (issue 24 items 1 and 2): each polls a task queue of
 * its own unless told otherwise, refuses readiness when another installation polls its queue,
 * fails (never completes) a workflow whose execution it does not have, and starts a new run for a
 * live execution whose run was closed — terminated by an operator, failed by another
 * installation's worker — or left on a task queue it no longer polls. Every outcome is checked
 * against what the sandbox provider received: never a second submission.
 */

const cli = temporalCli();
const first = durableHarness('lexec-owner-a-');
const second = durableHarness('lexec-owner-b-');
const dev = connectedDevServer(cli);

/** The executor's own (derived) task queue unless `taskQueue` names one; a rescheduler sweeping every 300 ms. */
const onServer = (taskQueue: string | null = null) => ({ engine: { mode: 'external' as const, url: dev.server.url, taskQueue }, executorEnv: { [RESCHEDULE_INTERVAL_ENV]: '300' } });

const taskQueueOf = (s: Stack) => {
  const started = s.executor.events().find((event) => event.event === 'executor_started') as { workflow_engine: { task_queue: string } } | undefined;
  if (started === undefined) throw new Error('the executor has not started');
  return started.workflow_engine.task_queue;
};

const readyz = async (s: Stack) => (await (await fetch(`${s.executor.url()}/readyz`)).json()) as { status: string; reason?: string; field?: string };

const rescheduled = (s: Stack) => s.executor.events().filter((event) => event.event === 'workflow_rescheduled');

/** Admits one execution and waits until its submission was accepted and checkpointed (the run is polling). */
async function polling(s: Stack): Promise<string> {
  const executionId = await s.submit(await s.approvedToken(), 1);
  await s.waitFor(executionId, 'checkpointed', (execution) => execution.provider_attempts[0]?.checkpointed === true);
  return executionId;
}

describe.skipIf(cli === null)('executors sharing a Temporal server', () => {
  it('each polls a queue of its own: concurrent runs on two executors all succeed, and each sandbox receives exactly its own submissions', async () => {
    const [a, b] = await Promise.all([first.stack(onServer()), second.stack(onServer())]);
    const [queueA, queueB] = [taskQueueOf(a), taskQueueOf(b)];
    expect(queueA).toMatch(/^lexec-[0-9a-f]{12}$/);
    expect(queueB).toMatch(/^lexec-[0-9a-f]{12}$/);
    expect(queueA).not.toBe(queueB);

    const admit = async (s: Stack) => Promise.all(Array.from({ length: 4 }, async () => s.submit(await s.approvedToken(), 1)));
    const [ofA, ofB] = await Promise.all([admit(a), admit(b)]);
    const finished = async (s: Stack, ids: string[]) => Promise.all(ids.map((id) => s.waitFor(id, 'success', (execution) => execution.state === 'succeeded', 60_000)));
    await Promise.all([finished(a, ofA), finished(b, ofB)]);

    const seeds = async (s: Stack) => (await s.sandbox.submissions()).map((submission) => submission.seed).sort();
    expect(await seeds(a)).toEqual(ofA.map((id) => correlationOf(id, true).value).sort());
    expect(await seeds(b)).toEqual(ofB.map((id) => correlationOf(id, true).value).sort());
    expect([...rescheduled(a), ...rescheduled(b)]).toEqual([]);

    // The history names the installation's worker that ran it.
    const history = await dev.client.workflow.getHandle(`lexec-execution-${ofA[0] ?? ''}`).fetchHistory();
    const identities = (history.events ?? []).map((event) => event.workflowTaskCompletedEventAttributes?.identity).filter((identity) => identity != null);
    expect(identities.length).toBeGreaterThan(0);
    for (const identity of identities) expect(identity).toMatch(/^lexec-executor\/[0-9a-f]{12}@/);
  }, 180_000);

  it('an explicit task queue another installation polls: neither is ready (task_queue_shared, naming the field), and a workflow neither owns fails with execution_not_owned, never completes', async () => {
    const queue = `team-queue-${randomUUID().slice(0, 8)}`;
    const a = await first.stack(onServer(queue));
    const b = await second.stack({ ...onServer(queue), waitUntilReady: false });
    const shared = { status: 'not_ready', reason: 'task_queue_shared', field: 'workflow_engine.task_queue' };
    await until('the second executor refuses readiness', async () => ((await readyz(b)).reason === 'task_queue_shared' ? true : undefined), 30_000);
    expect(await readyz(b)).toEqual(shared);
    await until('the first executor withdraws readiness', async () => ((await readyz(a)).reason === 'task_queue_shared' ? true : undefined), 30_000);
    expect(b.executor.events()).toContainEqual(expect.objectContaining({ event: 'task_queue_shared', field: 'workflow_engine.task_queue', task_queue: queue }));
    // Admission refuses while the queue is shared.
    const refused = await call(a.executor.url(), 'POST', '/v2/executions', { token: a.caller, body: executionRequest(await a.approvedToken()) });
    expect(refused.status).toBe(503);

    const foreign = await dev.client.workflow.start('lexecExecution', {
      taskQueue: queue,
      workflowId: `lexec-execution-exe_${randomUUID().replaceAll('-', '')}`,
      args: [{ execution_id: `exe_${'0'.repeat(32)}`, phase: 'submit_provider' }],
    });
    const failure = await foreign.result().then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(failure).toBeInstanceOf(WorkflowFailedError);
    const activity = (failure as WorkflowFailedError).cause;
    expect(activity).toBeInstanceOf(ActivityFailure);
    expect(activity?.cause).toBeInstanceOf(ApplicationFailure);
    expect(activity?.cause).toMatchObject({ type: 'execution_not_owned', nonRetryable: true });
    expect((await foreign.describe()).status.name).toBe('FAILED');
    expect((await a.sandbox.submissions()).length + (await b.sandbox.submissions()).length).toBe(0);
  }, 180_000);

  it("a run another installation's worker failed is started again by its owner: the execution succeeds, submitted once", async () => {
    const [a, b] = await Promise.all([first.stack({ ...onServer(), sandboxArgs: ['--complete-after-ms', '2500'] }), second.stack(onServer())]);
    const executionId = await polling(a);
    // As if the other executor's worker had been handed this run: it is moved to b's queue.
    const moved = await dev.client.workflow.start('lexecExecution', {
      taskQueue: taskQueueOf(b),
      workflowId: `lexec-execution-${executionId}`,
      args: [{ execution_id: executionId, phase: 'poll_provider_operation' }],
      workflowIdConflictPolicy: 'TERMINATE_EXISTING',
    });
    await a.waitFor(executionId, 'success', (execution) => execution.state === 'succeeded', 60_000);
    expect(await a.sandbox.submissions()).toHaveLength(1);
    // b's worker failed it (or a moved it back first); it was never completed under a live execution.
    const foreignRun = await dev.client.workflow.getHandle(moved.workflowId, moved.firstExecutionRunId).describe();
    expect(['FAILED', 'TERMINATED']).toContain(foreignRun.status.name);
    // a started it again once. It found the run closed by b's worker, or still open on b's queue:
    // then its start ended that run (TERMINATED) — unless b's worker failed it in between (FAILED,
    // recorded as found: moved).
    const records = rescheduled(a).filter((event) => event.execution_id === executionId);
    const foundOpen = foreignRun.status.name === 'TERMINATED' || records[0]?.reason === 'task_queue_moved';
    expect(records).toEqual([
      foundOpen
        ? expect.objectContaining({ reason: 'task_queue_moved', previous_task_queue: taskQueueOf(b), task_queue: taskQueueOf(a) })
        : expect.objectContaining({ reason: 'run_closed', closed_status: 'FAILED', task_queue: taskQueueOf(a) }),
    ]);
    if (foreignRun.status.name === 'FAILED') expect(b.executor.events()).toContainEqual(expect.objectContaining({ event: 'execution_activity_error', error_name: 'ExecutionNotOwned' }));
  }, 180_000);

  it('an operator terminates the run mid-poll: a new run polls the same operation to success, submitted once, logged and counted', async () => {
    const a = await first.stack({ ...onServer(), sandboxArgs: ['--complete-after-ms', '2500'] });
    const executionId = await polling(a);
    const handle = dev.client.workflow.getHandle(`lexec-execution-${executionId}`);
    const { runId: terminated } = await handle.describe();
    await handle.terminate('operator in the Temporal UI');
    const done = await a.waitFor(executionId, 'success', (execution) => execution.state === 'succeeded', 60_000);
    expect(done.provider_attempts).toHaveLength(1);
    expect(await a.sandbox.submissions()).toHaveLength(1);
    expect(rescheduled(a)).toEqual([expect.objectContaining({ execution_id: executionId, reason: 'run_closed', closed_status: 'TERMINATED', task_queue: taskQueueOf(a) })]);
    const latest = await handle.describe();
    expect(latest.runId).not.toBe(terminated);
    await until('the new run completes', async () => ((await handle.describe()).status.name === 'COMPLETED' ? true : undefined));
    expect(await countRescheduledRuns(join(first.dir(), 'executor', 'executor.db'))).toMatchObject({ total: 1, last_24h: 1 });
  }, 180_000);

  it('a run an operator terminates after the park but before the ledger record (the ledger away) is started again: the record is opened with the evidence, nothing submitted again', async () => {
    const a = await first.stack({ ...onServer(), sandboxArgs: ['--complete-after-ms', '2500'] });
    await a.sandbox.setFaults([{ kind: 'complete_with_error', times: 1 }]);
    const tokenId = await a.approvedToken();
    const executionId = await a.submit(tokenId, 1);
    await a.waitFor(executionId, 'checkpointed', (execution) => execution.provider_attempts[0]?.checkpointed === true);
    // The ledger goes away: the run parks the execution, then waits to open the ledger record.
    await a.ledger.stop('SIGKILL');
    await a.waitFor(executionId, 'parked', (execution) => execution.state === 'reconciliation', 60_000);
    const handle = dev.client.workflow.getHandle(`lexec-execution-${executionId}`);
    await until('the run waits on the ledger', async () => ((await handle.describe()).status.name === 'RUNNING' ? true : undefined));
    await handle.terminate('operator in the Temporal UI');
    await a.upgradeLedger();

    const records = async () =>
      (await call<{ records: { execution_id: string; reason: string; evidence: { correlation?: unknown } }[] }>(a.ledger.url, 'GET', '/reconciliation-records', { token: a.reconciliation })).body.records;
    const record = await until('the ledger record is opened', async () => (await records()).find((entry) => entry.execution_id === executionId), 60_000);
    expect(record.reason).toBe('billing_ambiguous');
    expect(record.evidence.correlation).toBeDefined();
    expect(rescheduled(a)).toEqual([expect.objectContaining({ execution_id: executionId, reason: 'run_closed', closed_status: 'TERMINATED' })]);
    expect(await a.sandbox.submissions()).toHaveLength(1);
    expect((await a.execution(executionId)).state).toBe('reconciliation');
  }, 180_000);

  it('a run terminated before its submission (its executor died at the submit phase) is started again at restart and submits once', async () => {
    const arm = join(first.dir(), 'crash-point');
    await writeFile(arm, 'run.before_attempt\n');
    const a = await first.stack({ ...onServer(), executorEnv: { [RESCHEDULE_INTERVAL_ENV]: '300', [CRASH_FILE_ENV]: arm } });
    const tokenId = await a.approvedToken();
    const executionId = executionIdFor(tokenId);
    // The executor may die before it answers: the execution id is derived from the token either way.
    await call(a.executor.url(), 'POST', '/v2/executions', { token: a.caller, body: executionRequest(tokenId, { input: { prompt: 'a lighthouse', image_count: 1, image_size: 'square_hd' } }) }).catch(() => undefined);
    await until('the executor died at the submit phase', () => Promise.resolve(existsSync(`${arm}.fired`) ? true : undefined));
    await a.executor.kill();
    await dev.client.workflow.getHandle(`lexec-execution-${executionId}`).terminate('operator');
    expect(await a.sandbox.submissions()).toHaveLength(0);

    await rm(`${arm}.fired`);
    await a.restart();
    await a.waitFor(executionId, 'success', (execution) => execution.state === 'succeeded', 60_000);
    expect(await a.sandbox.submissions()).toHaveLength(1);
    expect(rescheduled(a)).toEqual([expect.objectContaining({ execution_id: executionId, reason: 'run_closed', closed_status: 'TERMINATED' })]);
  }, 180_000);

  it('an upgrade from an explicit queue to the derived one moves the open runs: they finish on the new queue, submitted once', async () => {
    const old = `lexec-executions-${randomUUID().slice(0, 8)}`;
    const a = await first.stack({ ...onServer(old), sandboxArgs: ['--complete-after-ms', '2500'] });
    const executionId = await polling(a);
    await a.executor.kill('SIGKILL');
    // The operator re-renders without task_queue (the profile examples no longer set it).
    const config = JSON.parse(await readFile(a.configPath, 'utf8')) as { workflow_engine: Record<string, unknown> };
    delete config.workflow_engine.task_queue;
    await writeFile(a.configPath, JSON.stringify(config, null, 2));
    await a.restart();
    expect(taskQueueOf(a)).toMatch(/^lexec-[0-9a-f]{12}$/);
    await a.waitFor(executionId, 'success', (execution) => execution.state === 'succeeded', 60_000);
    expect(await a.sandbox.submissions()).toHaveLength(1);
    expect(rescheduled(a)).toEqual([expect.objectContaining({ execution_id: executionId, reason: 'task_queue_moved', previous_task_queue: old, task_queue: taskQueueOf(a) })]);
  }, 180_000);
});
