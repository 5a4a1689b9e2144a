import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import type { ExecutionPhase } from '../../domain/execution-states.js';
import { ExecutionNotOwned, type ActivityOutcome, type RunActivity } from '../workflow-engine.js';

/**
 * The Temporal activities: one per runner phase, each taking only the execution id and answering
 * only the runner's outcome (kind, next phase or delay). They are the embedded engine's phases,
 * run by the same runner on the same database (docs/executions.md "The engine").
 */
export interface PhaseActivities {
  submit_provider(executionId: string): Promise<ActivityOutcome>;
  poll_provider_operation(executionId: string): Promise<ActivityOutcome>;
  store_artifacts(executionId: string): Promise<ActivityOutcome>;
  settle(executionId: string): Promise<ActivityOutcome>;
}

const SAFE_NAME = /^[A-Za-z][A-Za-z0-9_]{0,63}$/;

/**
 * How often a running activity tells the engine this worker is alive. With the heartbeat timeout
 * of the workflow's activity options (3 s) an activity of a killed executor is handed to the next
 * worker within seconds, instead of after its whole start-to-close timeout. (The SDK sends them on
 * at most every 80 % of that timeout; beating more often here only keeps the latest one fresh.)
 */
export const HEARTBEAT_INTERVAL_MS = 1_000;

/**
 * An activity that threw is retried by the engine's retry policy, like the embedded engine's
 * backoff. What goes into the workflow history is only a categorical failure: the error's class
 * name, no message and no stack (a message may hold a path or a host; a stack holds paths).
 */
function historySafeFailure(phase: ExecutionPhase, error: unknown): ApplicationFailure {
  const name = error instanceof Error && SAFE_NAME.test(error.name) ? error.name : 'Error';
  const failure = ApplicationFailure.retryable(`${phase} failed (${name})`, name);
  failure.stack = '';
  return failure;
}

/**
 * Another installation's execution: a non-retryable failure, so the run fails where its owner
 * sees it (status FAILED, failure type `execution_not_owned`) and its owner's rescheduler starts
 * a run of its own (docs/executions.md "Task-queue ownership"). Never "done", never retried here.
 */
function notOwnedFailure(phase: ExecutionPhase): ApplicationFailure {
  const failure = ApplicationFailure.nonRetryable(`${phase}: the execution is not this executor's`, 'execution_not_owned');
  failure.stack = '';
  return failure;
}

export function createPhaseActivities(options: {
  readonly runActivity: RunActivity;
  readonly onActivityError?: (executionId: string, phase: ExecutionPhase, error: unknown) => void;
}): PhaseActivities {
  // The engine may hand out an activity again while its first try still runs here (a heartbeat
  // that did not reach an engine that was away): one execution's phases run one at a time in this
  // process, and the later one reads what the earlier one left in the database.
  const turns = new Map<string, Promise<unknown>>();
  const inTurn = async <T>(executionId: string, work: () => Promise<T>): Promise<T> => {
    const previous = turns.get(executionId) ?? Promise.resolve();
    const mine = previous.catch(() => undefined).then(work);
    turns.set(executionId, mine);
    try {
      return await mine;
    } finally {
      if (turns.get(executionId) === mine) turns.delete(executionId);
    }
  };
  const run = (phase: ExecutionPhase) => async (executionId: string) => {
    const context = Context.current();
    // A local activity cannot heartbeat: the workflow task it runs in carries it.
    const beat = context.info.isLocal
      ? undefined
      : setInterval(() => {
          context.heartbeat();
        }, HEARTBEAT_INTERVAL_MS);
    try {
      return await inTurn(executionId, () => runPhase(phase, executionId));
    } finally {
      clearInterval(beat);
    }
  };
  const runPhase = async (phase: ExecutionPhase, executionId: string): Promise<ActivityOutcome> => {
    try {
      const outcome = await options.runActivity(executionId, phase);
      // Only the outcome's own fields travel: nothing else the runner might add.
      if (outcome.kind === 'next') return { kind: 'next', phase: outcome.phase } as const;
      if (outcome.kind === 'later') return { kind: 'later', delayMs: outcome.delayMs } as const;
      return { kind: 'done' } as const;
    } catch (error) {
      options.onActivityError?.(executionId, phase, error);
      if (error instanceof ExecutionNotOwned) throw notOwnedFailure(phase);
      throw historySafeFailure(phase, error);
    }
  };
  return {
    submit_provider: run('submit_provider'),
    poll_provider_operation: run('poll_provider_operation'),
    store_artifacts: run('store_artifacts'),
    settle: run('settle'),
  };
}
