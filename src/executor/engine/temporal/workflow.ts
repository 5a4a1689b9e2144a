import { continueAsNew, proxyActivities, sleep, workflowInfo } from '@temporalio/workflow';
import type { ExecutionPhase } from '../../domain/execution-states.js';
import type { ActivityOutcome } from '../workflow-engine.js';
import type { PhaseActivities } from './activities.js';

/*
 * The Temporal workflow of one execution (docs/executions.md "The engine"). Deterministic code
 * only: it imports activity *types*, never their implementation, and is bundled once at build time
 * (workflow-bundle.ts). Its input — the only payload besides the activities' execution id and
 * outcome — is the execution id and a phase: never credentials, bodies, URLs or paths. Every
 * decision is made by the activities from the executor's database; this code only orders them and
 * turns a "later" into a durable timer.
 */

export interface ExecutionWorkflowInput {
  readonly execution_id: string;
  readonly phase: ExecutionPhase;
}

/** The workflow type name (one type for every execution). */
export const EXECUTION_WORKFLOW_TYPE = 'lexecExecution';

const phases = proxyActivities<PhaseActivities>({
  startToCloseTimeout: '2 minutes',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '1 minute' },
});

/** Past this many events a run continues as new at its current phase, so a long poll never grows one history without bound. */
const HISTORY_LIMIT = 2_000;

export async function lexecExecution(input: ExecutionWorkflowInput): Promise<void> {
  const executionId = input.execution_id;
  // Submission is made by the first poll when nothing was submitted yet.
  let phase: ExecutionPhase = input.phase === 'submit_provider' ? 'poll_provider_operation' : input.phase;
  for (;;) {
    const outcome: ActivityOutcome = await phases[phase](executionId);
    if (outcome.kind === 'done') return;
    if (outcome.kind === 'next') phase = outcome.phase;
    else await sleep(outcome.delayMs);
    const info = workflowInfo();
    if (info.continueAsNewSuggested || info.historyLength > HISTORY_LIMIT) {
      await continueAsNew<typeof lexecExecution>({ execution_id: executionId, phase });
    }
  }
}
