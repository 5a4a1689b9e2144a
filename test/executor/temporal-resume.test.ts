import { historyToJSON } from '@temporalio/common/lib/proto-utils.js';
import { existsSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CRASH_FILE_ENV } from '../../src/crash-points.js';
import { RESCHEDULE_INTERVAL_ENV } from '../../src/executor/engine/development-reschedule-interval.js';
import { durableHarness, until, type Stack } from '../support/durable-stack.js';
import { connectedDevServer, temporalCli } from '../support/temporal.js';

/*
 * What the executor tells a real Temporal server so that a SIGKILLed executor's work resumes as
 * soon as the executor is back (docs/executions.md "The engine"; the figures: docs/reliability.md
 * "Crash points", measured by bench/proof/resume.mjs — never asserted here): every run it starts
 * has a 3 s workflow task timeout (a dead worker's local phases are handed out again after 3 s,
 * not the default 10), the submission activity a 3 s heartbeat timeout, and restart recovery
 * releases each run from the dead worker's sticky queue — a non-terminal execution's, and a parked
 * one's whose run is still opening its ledger record — so the run's next workflow task goes to the
 * queue the new worker polls instead of waiting there for the sticky timeout.
 */

const cli = temporalCli();
const harness = durableHarness('lexec-resume-');
const dev = connectedDevServer(cli);

interface HistoryEvent {
  eventTime: string;
  eventType: string;
  workflowTaskTimedOutEventAttributes?: { timeoutType: string };
  activityTaskScheduledEventAttributes?: { activityType: { name: string }; heartbeatTimeout?: string };
  workflowTaskScheduledEventAttributes?: { taskQueue: { name: string; kind: string } };
}

async function history(workflowId: string): Promise<HistoryEvent[]> {
  return (JSON.parse(historyToJSON(await dev.client.workflow.getHandle(workflowId).fetchHistory())) as { events: HistoryEvent[] }).events;
}

/** The run's workflow task timeout in seconds, as the engine keeps it. */
async function workflowTaskTimeoutSeconds(workflowId: string): Promise<number> {
  const { raw } = await dev.client.workflow.getHandle(workflowId).describe();
  return Number(String(raw.executionConfig?.defaultWorkflowTaskTimeout?.seconds ?? 0));
}

describe.skipIf(cli === null)('resuming a killed executor\'s work on a real Temporal server', () => {
  it('every run, the first and one the closed-run sweep starts again, has a 3 s workflow task timeout; the submission activity a 3 s heartbeat timeout', async () => {
    const s: Stack = await harness.stack({
      engine: { mode: 'external', url: dev.server.url },
      executorEnv: { [RESCHEDULE_INTERVAL_ENV]: '300' },
      sandboxArgs: ['--complete-after-ms', '3000'],
    });
    const executionId = await s.submit(await s.approvedToken(), 1);
    const workflowId = `lexec-execution-${executionId}`;
    await s.waitFor(executionId, 'checkpointed', (execution) => execution.provider_attempts[0]?.checkpointed === true);
    expect(await workflowTaskTimeoutSeconds(workflowId)).toBe(3);
    const submissions = (await history(workflowId)).flatMap((event) => (event.activityTaskScheduledEventAttributes === undefined ? [] : [event.activityTaskScheduledEventAttributes]));
    expect(submissions.map((scheduled) => [scheduled.activityType.name, scheduled.heartbeatTimeout])).toEqual([['submit_provider', '3s']]);

    // An operator terminates the run mid-poll; the sweep starts a new one, with the same timeout.
    const { runId: terminated } = await dev.client.workflow.getHandle(workflowId).describe();
    await dev.client.workflow.getHandle(workflowId).terminate('operator');
    await s.waitFor(executionId, 'success', (execution) => execution.state === 'succeeded', 60_000);
    const latest = await dev.client.workflow.getHandle(workflowId).describe();
    expect(latest.runId).not.toBe(terminated);
    expect(await workflowTaskTimeoutSeconds(workflowId)).toBe(3);
  }, 120_000);

  it('after a SIGKILL, no workflow task is put on the dead worker\'s sticky queue once the restarted executor has recovered its executions', async () => {
    const s = await harness.stack({
      engine: { mode: 'external', url: dev.server.url },
      sandboxArgs: ['--complete-after-ms', '9000'],
      // Every status poll waits 6 s on a durable timer: the executor dies with the run waiting on
      // one, and its next workflow task comes once the timer fires — after the restart, while the
      // engine still counts the dead worker's sticky queue as polled (it does for 10 s).
      configure: (config) => {
        Object.assign(config.providers as Record<string, unknown>, { poll_initial_ms: 6_000, poll_max_ms: 6_000 });
      },
    });
    const executionId = await s.submit(await s.approvedToken(), 1);
    const workflowId = `lexec-execution-${executionId}`;
    const sticky = await until(
      'the run waiting on its poll timer, served from the worker\'s sticky queue',
      async () => {
        const events = await history(workflowId);
        if (!events.some((event) => event.eventType === 'EVENT_TYPE_TIMER_STARTED')) return undefined;
        const names = events.flatMap((event) => {
          const queue = event.workflowTaskScheduledEventAttributes?.taskQueue;
          return queue?.kind === 'TASK_QUEUE_KIND_STICKY' ? [queue.name] : [];
        });
        return names.length > 0 ? new Set(names) : undefined;
      },
      30_000,
    );
    await s.executor.kill('SIGKILL');
    await s.restart();
    const recovered = await until('restart recovery done', () => {
      const event = s.executor.events().find((entry) => entry.event === 'executor_recovery_scheduled');
      return Promise.resolve(event === undefined ? undefined : Date.parse(String(event.time)));
    });
    await s.waitFor(executionId, 'success', (execution) => execution.state === 'succeeded', 60_000);

    const after = (await history(workflowId)).filter((event) => event.workflowTaskScheduledEventAttributes !== undefined && Date.parse(event.eventTime) > recovered);
    // The job was still under way after the restart: the run had workflow tasks after recovery.
    expect(after.length).toBeGreaterThan(0);
    const onDeadQueue = after.filter((event) => sticky.has(event.workflowTaskScheduledEventAttributes?.taskQueue.name ?? ''));
    expect(onDeadQueue).toEqual([]);
  }, 120_000);

  it('a run parked by the killed executor before its ledger record was opened: the restarted executor releases it too, and no workflow task waits out the sticky timeout', async () => {
    const arm = join(harness.dir(), 'crash-point');
    await writeFile(arm, 'run.after_park\n');
    const s = await harness.stack({ engine: { mode: 'external', url: dev.server.url }, executorEnv: { [CRASH_FILE_ENV]: arm } });
    // The provider's answer is lost: the submission phase parks the execution and dies before the ledger record.
    await s.sandbox.setFaults([{ kind: 'drop_after_receipt', times: 1 }]);
    const tokenId = await s.approvedToken();
    const executionId = await s.submit(tokenId, 1);
    await until('the executor died after parking', () => Promise.resolve(existsSync(`${arm}.fired`) ? true : undefined));
    await s.executor.kill('SIGKILL');
    await s.restart();
    const workflowId = `lexec-execution-${executionId}`;
    await until('the run completed', async () => ((await dev.client.workflow.getHandle(workflowId).describe()).status.name === 'COMPLETED' ? true : undefined), 60_000);
    expect((await s.execution(executionId)).state).toBe('reconciliation');
    // The submission phase handed out again completed after the restart; its workflow task went
    // to the shared queue, never to the dead worker's sticky queue to time out there.
    const stickyTimeouts = (await history(workflowId)).filter((event) => event.workflowTaskTimedOutEventAttributes?.timeoutType === 'TIMEOUT_TYPE_SCHEDULE_TO_START');
    expect(stickyTimeouts).toEqual([]);
  }, 120_000);
});
