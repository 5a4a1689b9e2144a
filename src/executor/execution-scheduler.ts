/**
 * The port through which admission hands an execution to the workflow engine, at its stable
 * workflow id. Scheduling the same id twice must be harmless (one active run per id). The
 * engines implement it (embedded, managed_local, external); a failure leaves the execution
 * pending, and the identical retry schedules it.
 */
export interface ExecutionScheduler {
  schedule(executionId: string, workflowId: string): Promise<void>;
  /**
   * Restart recovery (engine/reschedule-non-terminal.ts), for a run a previous process may have
   * been serving: an engine that binds a run to the worker that served it last (Temporal's sticky
   * queue) lets go of that binding — that worker died with its process — so the run's next task
   * goes where this process's worker polls. Only a shortcut (the engine lets go by itself a little
   * later): never rejects.
   */
  release?(workflowId: string): Promise<void>;
}
