/**
 * The port through which admission hands an execution to the workflow engine, at its stable
 * workflow id. Scheduling the same id twice must be harmless (one active run per id). The
 * engines implement it (embedded, managed_local, external); a failure leaves the execution
 * pending, and the identical retry schedules it.
 */
export interface ExecutionScheduler {
  schedule(executionId: string, workflowId: string): Promise<void>;
  /**
   * Restart recovery's scheduling (engine/reschedule-non-terminal.ts): as `schedule`, for an
   * execution a previous process may have been running. An engine that binds a run to the worker
   * that last served it (Temporal's sticky queue) lets go of that binding here — that worker died
   * with its process — so the run's next task goes where this process's worker polls. Without it,
   * `schedule` is used.
   */
  reschedule?(executionId: string, workflowId: string): Promise<void>;
}
