import { continueAsNew, patched, proxyActivities, proxyLocalActivities, sleep, workflowInfo } from '@temporalio/workflow';
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

/*
 * Activity options (docs/executions.md "The engine"): a phase calls the provider or the ledger
 * with their own bounds (30 s, 5 s), so two minutes is a generous ceiling; a heartbeat every
 * second (activities.ts) with a 3 s timeout hands the phase of a killed executor to the next
 * worker 3 s after the kill plus the first retry's 1 s — by the time a restarted executor polls.
 * (Activity options are not part of the replay's determinism checks: histories recorded with the
 * earlier 5 s replay unchanged, test/executor/temporal-replay.test.ts.) A phase that threw is
 * retried with backoff 1 s doubling to 60 s, without end: every phase decides from the database,
 * so a retry never repeats a submission or a financial effect. Polling and waiting are not
 * retries: the runner answers "later" and the workflow sleeps on a durable timer.
 */
const RETRY = { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '1 minute' } as const;
const phases = proxyActivities<PhaseActivities>({ startToCloseTimeout: '2 minutes', heartbeatTimeout: '3 seconds', retry: RETRY });
/**
 * The phases after the submission as local activities: run by this worker within the workflow task
 * that reaches them, so a phase costs no task-queue round trip and no workflow task of its own.
 * Their guarantees are the same at least once (a worker that dies mid-phase leaves the workflow
 * task to time out — 3 s, temporal-runs.ts — and the next worker runs the phase again, deciding
 * from the database); a retry past 10 s waits on a durable timer rather than inside the workflow
 * task.
 */
const localPhases = proxyLocalActivities<PhaseActivities>({ startToCloseTimeout: '2 minutes', localRetryThreshold: '10 seconds', retry: RETRY });

/** Past this many events a run continues as new at its current phase, so a long poll never grows one history without bound. */
const HISTORY_LIMIT = 2_000;

/**
 * Spec §1.4 wants submission and polling as two separate activities, the submission
 * patch-protected. The first release of this workflow (histories `*-v0.json`) made the submission
 * from its first `poll_provider_operation` (the runner submits when nothing was submitted yet).
 * Runs started under it replay on that path, since their histories hold no marker of this patch;
 * every run started since schedules `submit_provider` first. Remove the old path only with
 * deprecatePatch, once no pre-patch run can still be open.
 */
export const SUBMIT_PROVIDER_PATCH = 'lexec-submit-provider-activity';

/**
 * The second change: polling, storing and settling became local activities (above). Runs started
 * before it (histories `*-v1.json` and older) keep scheduling them as activities on replay.
 */
export const LOCAL_PHASES_PATCH = 'lexec-local-phase-activities';

export async function lexecExecution(input: ExecutionWorkflowInput): Promise<void> {
  let phase = input.phase;
  if (phase === 'submit_provider' && !patched(SUBMIT_PROVIDER_PATCH)) phase = 'poll_provider_operation';
  await runPhases(input.execution_id, phase, patched(LOCAL_PHASES_PATCH));
}

/**
 * Runs phases from `first` on until the runner says done; a "later" is a durable timer. The
 * submission is always an activity of its own (spec §1.4); with `local`, the other phases are
 * local activities.
 */
export async function runPhases(executionId: string, first: ExecutionPhase, local = false): Promise<void> {
  let phase = first;
  for (;;) {
    const run = local && phase !== 'submit_provider' ? localPhases[phase] : phases[phase];
    const outcome: ActivityOutcome = await run(executionId);
    if (outcome.kind === 'done') return;
    if (outcome.kind === 'next') phase = outcome.phase;
    else await sleep(outcome.delayMs);
    const info = workflowInfo();
    if (info.continueAsNewSuggested || info.historyLength > HISTORY_LIMIT) {
      await continueAsNew<typeof lexecExecution>({ execution_id: executionId, phase });
    }
  }
}
