import { Client, Connection, WorkflowNotFoundError } from '@temporalio/client';
import Database from 'better-sqlite3';

/*
 * "At rest" on Temporal (docs/reliability.md): a proof's stack is at rest only when the invariant
 * checker is quiet AND the workflow run of every execution it judges has closed — a case must never
 * pass while a run is still open (it could still act), and a run that closed in a wrong state
 * must be seen. The workflow id is the one the executor records (`executions.workflow_id`); the
 * engine is asked with DescribeWorkflowExecution, which answers the latest run at that id (a run
 * that continued as new, or that the closed-run sweep started again, is judged by its newest run).
 *
 * Used by the crash matrix, the fault matrix (vitest) and the randomized driver (bench/proof, run
 * by Node's type stripping: this file imports no relative module and uses only erasable syntax).
 */

/** What the engine says of the latest run at one workflow id. */
export interface RunState {
  readonly workflowId: string;
  /** RUNNING, COMPLETED, FAILED, TERMINATED, …; `NOT_FOUND` (no run at the id) or `UNREACHABLE` (the engine did not answer). */
  readonly status: string;
  /** When it closed (engine clock, ms), or null while open. */
  readonly closedAtMs: number | null;
}

export interface TemporalRunStates {
  /** The latest run at each id, asked one at a time (a few dozen ids at most in a proof). */
  of(workflowIds: readonly string[]): Promise<RunState[]>;
  close(): Promise<void>;
}

/** The statuses of a run that will never act again. */
const CLOSED = new Set(['COMPLETED', 'FAILED', 'CANCELLED', 'TERMINATED', 'TIMED_OUT', 'CONTINUED_AS_NEW']);
/** Upper bound of one DescribeWorkflowExecution: an engine that is away (a killed Temporal child) is asked again later. */
const DESCRIBE_TIMEOUT_MS = 5_000;

/** Whether the run is closed: neither open nor unknown (an engine that did not answer is not a closed run). */
export function isClosed(state: RunState): boolean {
  return CLOSED.has(state.status);
}

/** `host:port` (or a `grpc://host:port` URL) of the engine's frontend; `namespace` default `default`. */
export function temporalRunStates(address: string, namespace = 'default'): TemporalRunStates {
  const connection = Connection.lazy({ address: address.replace(/^grpcs?:\/\//, '') });
  const client = new Client({ connection, namespace });
  const one = async (workflowId: string): Promise<RunState> => {
    try {
      const run = await connection.withDeadline(Date.now() + DESCRIBE_TIMEOUT_MS, () => client.workflow.getHandle(workflowId).describe());
      return { workflowId, status: run.status.name, closedAtMs: run.closeTime?.getTime() ?? null };
    } catch (error) {
      if (error instanceof WorkflowNotFoundError) return { workflowId, status: 'NOT_FOUND', closedAtMs: null };
      return { workflowId, status: 'UNREACHABLE', closedAtMs: null };
    }
  };
  return {
    async of(workflowIds) {
      const states: RunState[] = [];
      for (const workflowId of workflowIds) states.push(await one(workflowId));
      return states;
    },
    async close() {
      await connection.close().catch(() => undefined);
    },
  };
}

/** An execution as the executor records it, with the workflow id its runs live at. */
export interface ExecutionWorkflow {
  readonly executionId: string;
  readonly workflowId: string;
  readonly state: string;
  /** When the ledger answered the reconciliation record of a parked execution (ms), or null. */
  readonly ledgerRecordAt: number | null;
}

/** Every execution of an executor database (read-only), or those named. */
export function executionWorkflows(executorDatabase: string, executionIds?: readonly string[]): ExecutionWorkflow[] {
  const db = new Database(executorDatabase, { readonly: true, fileMustExist: true });
  try {
    const rows = db.prepare('SELECT execution_id, workflow_id, state, ledger_record_at FROM executions ORDER BY created_at').all() as {
      execution_id: string;
      workflow_id: string;
      state: string;
      ledger_record_at: number | null;
    }[];
    return rows
      .filter((row) => executionIds === undefined || executionIds.includes(row.execution_id))
      .map((row) => ({ executionId: row.execution_id, workflowId: row.workflow_id, state: row.state, ledgerRecordAt: row.ledger_record_at }));
  } finally {
    db.close();
  }
}

/**
 * Whether an execution needs no run any more: terminal, or parked with its reconciliation record
 * answered by the ledger (until then the run that parked it must open that record).
 */
function needsNoRun(execution: ExecutionWorkflow): boolean {
  return execution.state === 'succeeded' || execution.state === 'failed' || (execution.state === 'reconciliation' && execution.ledgerRecordAt !== null);
}

/**
 * The runs of these executions that are not at rest: still open, not found, or the engine did
 * not answer. Empty when every run has closed (in whatever state: `wronglyClosed` judges that).
 */
export async function unsettledRuns(runs: TemporalRunStates, executions: readonly ExecutionWorkflow[]): Promise<RunState[]> {
  const states = await runs.of(executions.map((execution) => execution.workflowId));
  return states.filter((state) => !isClosed(state));
}

/**
 * The closed runs that closed in a wrong state. A lexec run ends `COMPLETED` (the runner said
 * done: the execution is terminal or parked); anything else is wrong — except a run the proof
 * itself terminated (`terminated`), which may stay `TERMINATED` when its execution needs no run
 * any more: terminal, or parked with its ledger record answered. Whenever the termination came:
 * after the work was done, or while the run's last activity was still at work (a termination
 * does not stop an activity under way: it finishes the execution after its run has closed).
 * Otherwise the closed-run sweep must have started a newer run, and that one is judged.
 */
export function wronglyClosed(states: readonly RunState[], executions: readonly ExecutionWorkflow[], terminated: ReadonlySet<string> = new Set()): RunState[] {
  const byWorkflow = new Map(executions.map((execution) => [execution.workflowId, execution]));
  return states.filter((state) => {
    if (!isClosed(state) || state.status === 'COMPLETED') return false;
    const execution = byWorkflow.get(state.workflowId);
    return !(state.status === 'TERMINATED' && terminated.has(state.workflowId) && execution !== undefined && needsNoRun(execution));
  });
}
