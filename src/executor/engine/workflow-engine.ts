import type { ExecutionPhase } from '../domain/execution-states.js';
import type { ExecutionScheduler } from '../execution-scheduler.js';
import type { EngineSample } from '../readiness-monitor.js';

/** What running one phase of an execution decided. */
export type ActivityOutcome =
  | { readonly kind: 'next'; readonly phase: ExecutionPhase }
  | { readonly kind: 'done' }
  | { readonly kind: 'later'; readonly delayMs: number };

/** Runs one phase of one execution. All truth lives in the executor's database. */
export type RunActivity = (executionId: string, phase: ExecutionPhase) => Promise<ActivityOutcome>;

/**
 * A phase was asked to run an execution this executor's database does not hold: the workflow is
 * another installation's (a worker of another executor polls the same task queue). Never "done":
 * each engine turns it into a failure the owner can see and recover from (docs/executions.md
 * "Task-queue ownership").
 */
export class ExecutionNotOwned extends Error {
  override readonly name = 'ExecutionNotOwned';
  readonly code = 'execution_not_owned';
  constructor() {
    super('the execution is not in this executor\'s database');
  }
}

/** What the engine knows of the current run at an execution's workflow id. */
export type RunInspection =
  /** Open on this executor's task queue (or continued as new: a newer run carries on). */
  | { readonly kind: 'open' }
  /** Closed: completed, failed, terminated, canceled or timed out (`status` is the engine's name). */
  | { readonly kind: 'closed'; readonly status: string; readonly taskQueue: string }
  /** No run at all (never started, or removed by the engine's retention). */
  | { readonly kind: 'missing' }
  /** Open, but on another task queue, which this executor's worker never polls. */
  | { readonly kind: 'elsewhere'; readonly taskQueue: string };

/** An engine whose runs can close without the executor (Temporal): it can be asked about them and start them again. */
export interface WorkflowRuns {
  /** The task queue new runs are started on. */
  readonly taskQueue: string;
  inspect(workflowId: string): Promise<RunInspection>;
  /**
   * Starts a new run at the workflow id, from the phase the database decides on (the submission
   * phase, which reads the attempt row first). `replaceOpen`: an open run (on another task
   * queue) is terminated in the same step; otherwise an open run is kept and nothing starts.
   */
  startAgain(executionId: string, workflowId: string, replaceOpen: boolean): Promise<void>;
}

/**
 * The executor's workflow engine (ARCHITECTURE.md "Workflow engine: three modes, one port"):
 * `embedded`, `managed_local` and `external` all run the same runner phases and differ only in
 * where runs and timers are kept. The executor talks to whichever it was configured with through
 * this port alone.
 */
export interface WorkflowEngine extends ExecutionScheduler {
  /** Starts running work (the worker); resolves once it is polling or has taken over old runs. */
  start(): Promise<void>;
  /** One task-queue sample for the readiness monitor (spec §3 rules 1, 5-7). */
  probe(request: { readonly timeoutMs: number }): Promise<EngineSample>;
  /** Stops taking new work and waits up to `boundMs` for work in flight. */
  drain(boundMs: number): Promise<{ drained: boolean; inFlight: number }>;
  /** Releases connections and children; after drain. */
  close(): Promise<void>;
  /** Present when runs can close under a live execution (Temporal); the embedded engine's cannot. */
  readonly runs?: WorkflowRuns;
}
