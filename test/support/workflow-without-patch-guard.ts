import { runPhases, type ExecutionWorkflowInput } from '../../src/executor/engine/temporal/workflow.js';

/**
 * The execution workflow as a careless change would have shipped it: the separate submission
 * activity without its patched() guard. Replaying a pre-patch history against it must fail
 * (temporal-replay.test.ts), which is what proves that the guard is what keeps old runs working.
 */
export async function lexecExecution(input: ExecutionWorkflowInput): Promise<void> {
  await runPhases(input.execution_id, input.phase);
}
