/**
 * The port through which admission hands an execution to the workflow engine, at its stable
 * workflow id. Scheduling the same id twice must be harmless (one active run per id). The
 * engines implement it (embedded, managed_local, external); a failure leaves the execution
 * pending, and the identical retry schedules it.
 */
export interface ExecutionScheduler {
  schedule(executionId: string, workflowId: string): Promise<void>;
}
