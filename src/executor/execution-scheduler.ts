/**
 * The port through which admission hands an execution to the workflow engine, at its stable
 * workflow id. Scheduling the same id twice must be harmless (one active run per id). The
 * engines implement it (embedded, managed_local, external); a failure leaves the execution
 * pending, and the identical retry schedules it.
 */
export interface ExecutionScheduler {
  schedule(executionId: string, workflowId: string): Promise<void>;
}

/**
 * Accepts every schedule and runs nothing: executions wait in state `scheduled` until a
 * workflow engine runs them. The executor uses it until its engine is configured to run work.
 */
export function createDeferredScheduler(): ExecutionScheduler {
  return {
    async schedule() {
      // Intentionally nothing: the durable state `scheduled` is the hand-off.
    },
  };
}
