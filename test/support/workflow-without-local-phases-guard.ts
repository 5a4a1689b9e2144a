import { patched } from '@temporalio/workflow';
import { runPhases, SUBMIT_PROVIDER_PATCH, type ExecutionWorkflowInput } from '../../src/executor/engine/temporal/workflow.js';

/**
 * The execution workflow as a careless change would have shipped the second change: local
 * activities for the phases after the submission, without their patched() guard. Replaying a
 * history recorded before it must fail (temporal-replay.test.ts).
 */
export async function lexecExecution(input: ExecutionWorkflowInput): Promise<void> {
  const phase = input.phase === 'submit_provider' && !patched(SUBMIT_PROVIDER_PATCH) ? 'poll_provider_operation' : input.phase;
  await runPhases(input.execution_id, phase, true);
}
