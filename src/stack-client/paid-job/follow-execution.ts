import type { ExecutionView, ExecutorClient } from '../../executor/client/executor-client.js';
import { comingBack, UNREACHABLE_WINDOW_MS } from './admission.js';

/*
 * Following an admitted execution to a terminal state by long-poll — the one follow of every
 * client of a stack (`lexec run`, the agent's generate_images).
 */

/** A change of an execution's state or phase, as the follow reports it. */
export interface ExecutionChange {
  readonly kind: 'execution';
  readonly execution_id: string;
  readonly state: string;
  readonly phase: string | null;
}

const TERMINAL = new Set(['succeeded', 'failed', 'reconciliation']);

/** How long one wait for the next change asks the executor to hold the answer. */
export const FOLLOW_WAIT_SECONDS = 10;
/** After an answer that came early without a change (an executor that cannot wait), the pause before asking again. */
const EARLY_ANSWER_PAUSE_MS = 500;

/**
 * Follows the execution until it is terminal, reporting each change of state or phase as it
 * happens: each request waits at the executor for the next change (a long-poll; an executor
 * that answers at once is asked again after a short pause). An executor that stops answering (a
 * crash its supervisor repairs) is asked again for up to UNREACHABLE_WINDOW_MS: the execution
 * goes on without its follower.
 */
export async function followExecution(
  executor: ExecutorClient,
  admitted: ExecutionView,
  options: {
    readonly progress: (event: ExecutionChange) => void;
    /** Waits between requests (and throws at a deadline or an interrupt). */
    readonly pause: (ms: number) => Promise<void>;
    /** Submits the identical request again. */
    readonly admit: () => Promise<ExecutionView>;
    readonly now: () => number;
    /** How long the follower may still wait in all, in ms (the run's own deadline). */
    readonly remainingMs?: () => number;
    /** An interrupt: aborts a wait in progress (a read, so always safe), then `pause` reports it. */
    readonly signal?: AbortSignal;
    /**
     * Whether the stack was stopped (no supervisor runs it): an executor that does not answer
     * then is no restart to wait out, and the follow ends at once with the failure.
     */
    readonly stackStopped?: () => Promise<boolean>;
  },
): Promise<ExecutionView> {
  let execution = admitted;
  let shown = '';
  let unansweredSince: number | null = null;
  let interval = 250;
  for (;;) {
    const now = `${execution.state}/${execution.phase ?? ''}`;
    if (now !== shown) options.progress({ kind: 'execution', execution_id: execution.execution_id, state: execution.state, phase: execution.phase });
    shown = now;
    if (TERMINAL.has(execution.state)) return execution;
    try {
      if (execution.state === 'pending') {
        // A pending execution was not scheduled (a race with readiness): the identical request schedules it.
        await options.pause(interval);
        execution = await options.admit();
      } else if ((options.remainingMs?.() ?? Infinity) < 1_000) {
        // Less than a second left: no wait at the executor; `pause` ends the follow at the deadline.
        await options.pause(Math.max(0, options.remainingMs?.() ?? 0));
        execution = await executor.execution(execution.execution_id);
      } else {
        const seconds = Math.min(FOLLOW_WAIT_SECONDS, Math.floor((options.remainingMs?.() ?? FOLLOW_WAIT_SECONDS * 1000) / 1000));
        const asked = options.now();
        const next = await executor.execution(execution.execution_id, { seconds, state: execution.state, phase: execution.phase, ...(options.signal === undefined ? {} : { signal: options.signal }) });
        const unchanged = next.state === execution.state && next.phase === execution.phase;
        execution = next;
        // Answered early with nothing new: this executor does not wait; do not ask in a loop.
        if (unchanged) await options.pause(options.now() - asked < 1_000 ? EARLY_ANSWER_PAUSE_MS : 0);
      }
      unansweredSince = null;
      interval = 250;
    } catch (error) {
      if (options.signal?.aborted === true) await options.pause(0);
      if (!comingBack(error)) throw error;
      if ((await options.stackStopped?.()) === true) throw error;
      unansweredSince ??= options.now();
      if (options.now() - unansweredSince >= UNREACHABLE_WINDOW_MS) throw error;
      await options.pause(interval);
      interval = Math.min(1_000, Math.round(interval * 1.5));
    }
  }
}
