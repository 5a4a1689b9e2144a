import { WorkflowNotFoundError, type Client, type Connection } from '@temporalio/client';
import type { RunInspection, WorkflowRuns } from '../workflow-engine.js';
import { EXECUTION_WORKFLOW_TYPE, type ExecutionWorkflowInput } from './workflow.js';

/*
 * Runs that closed under a live execution, on Temporal (docs/executions.md "Rescheduling closed
 * runs"): an operator terminated one from the UI or CLI, or another installation's worker failed
 * it (`execution_not_owned`), or the engine's retention removed it, or it waits on a task queue
 * this executor no longer polls. The rescheduler (../reschedule-closed-runs.ts) asks about each
 * non-terminal execution here and starts a new run where needed.
 */

/** Upper bound of one DescribeWorkflowExecution or start; a sweep moves on and asks again next time. */
export const RUN_RPC_TIMEOUT_MS = 5_000;

/**
 * The workflow task timeout of every run this executor starts (a continued-as-new run inherits
 * it). A workflow task is where the local phases run (poll, store, settle: workflow.ts); when its
 * worker is SIGKILLed, the engine hands the task to the next worker only once this runs out
 * (default 10 s). At 3 s a restarted executor finds the task waiting for it by the time its worker
 * polls (docs/executions.md "The engine"). A phase longer than this is not cut short: the worker
 * extends its task at 80 % of the timeout while a local activity runs.
 */
export const WORKFLOW_TASK_TIMEOUT = '3 seconds';

/** The statuses of a run that will never run a phase again. */
const CLOSED = new Set(['COMPLETED', 'FAILED', 'CANCELLED', 'TERMINATED', 'TIMED_OUT']);

export function createTemporalRuns(options: { readonly client: Client; readonly connection: Connection; readonly taskQueue: string }): WorkflowRuns {
  const { client, connection, taskQueue } = options;
  const bounded = <T>(call: () => Promise<T>) => connection.withDeadline(Date.now() + RUN_RPC_TIMEOUT_MS, call);
  return {
    taskQueue,
    async inspect(workflowId): Promise<RunInspection> {
      try {
        const run = await bounded(() => client.workflow.getHandle(workflowId).describe());
        const status = run.status.name;
        if (CLOSED.has(status)) return { kind: 'closed', status, taskQueue: run.taskQueue };
        // RUNNING or PAUSED where this worker polls; CONTINUED_AS_NEW (a newer run carries on)
        // or a status this SDK cannot name: left alone.
        if (status === 'RUNNING' && run.taskQueue !== taskQueue) return { kind: 'elsewhere', taskQueue: run.taskQueue };
        return { kind: 'open' };
      } catch (error) {
        if (error instanceof WorkflowNotFoundError) return { kind: 'missing' };
        throw error;
      }
    },
    async startAgain(executionId, workflowId, replaceOpen) {
      // The runner decides from the database where to go on: the submission phase reads the attempt
      // row first (checkpointed → poll; none → submit; interrupted → reconciliation).
      const input: ExecutionWorkflowInput = { execution_id: executionId, phase: 'submit_provider' };
      await bounded(() =>
        client.workflow.start(EXECUTION_WORKFLOW_TYPE, {
          taskQueue,
          workflowId,
          args: [input],
          workflowTaskTimeout: WORKFLOW_TASK_TIMEOUT,
          // A closed id may be started again; a start racing another one finds it and keeps it.
          workflowIdReusePolicy: 'ALLOW_DUPLICATE',
          workflowIdConflictPolicy: replaceOpen ? 'TERMINATE_EXISTING' : 'USE_EXISTING',
        }),
      );
    },
  };
}
