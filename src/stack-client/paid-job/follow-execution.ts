import type { ExecutionView, ExecutorClient } from '../../executor/client/executor-client.js';
import { engineStateOf } from '../../executor/domain/readiness-state.js';
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

/**
 * The executor's workflow engine does not answer (its readiness says so): the execution is held
 * where it is — its state is in the executor's and the engine's databases, its authorization
 * claimed — and resumes when the engine returns. `address`: the engine's grpc:// URL, when the
 * executor names it.
 */
export interface EngineUnreachable {
  readonly kind: 'engine_unreachable';
  readonly execution_id: string;
  readonly address: string | null;
}

/** The workflow engine answers again after an `engine_unreachable` (the executor's readiness no longer names it). */
export interface EngineBack {
  readonly kind: 'engine_back';
  readonly execution_id: string;
  readonly address: string | null;
}

/** What the follow reports while it waits. */
export type FollowEvent = ExecutionChange | EngineUnreachable | EngineBack;

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
 *
 * An answer without progress is a moment to ask the executor's readiness why: when it says the
 * workflow engine does not answer, that is reported once (`engine_unreachable`), and once it no
 * longer says so, once more (`engine_back`). Only readiness decides either: a phase an activity
 * already under way finishes during an outage is no sign the engine is back.
 */
export async function followExecution(
  executor: ExecutorClient,
  admitted: ExecutionView,
  options: {
    readonly progress: (event: FollowEvent) => void;
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
  /** The outage reported and not yet over. */
  let outage: EngineUnreachable | null = null;
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
        // No progress: is the engine under it gone? And while it is, has it come back?
        if (unchanged || outage !== null) outage = await watchEngine(executor, execution.execution_id, outage, options.progress);
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

/**
 * Asks the executor's readiness what became of its workflow engine; reports an outage when one
 * begins (none reported yet) and its end when the engine answers again. Returns the outage still
 * reported. A readiness that does not answer tells nothing: the follow's own reads decide about
 * the executor.
 */
async function watchEngine(executor: ExecutorClient, executionId: string, outage: EngineUnreachable | null, progress: (event: FollowEvent) => void): Promise<EngineUnreachable | null> {
  const readiness = await executor.readiness().catch(() => null);
  if (readiness === null) return outage;
  const engine = readiness.ready ? 'answers' : engineStateOf(readiness.reason);
  if (engine === 'unreachable' && outage === null) {
    const begun: EngineUnreachable = { kind: 'engine_unreachable', execution_id: executionId, address: readiness.ready ? null : (readiness.address ?? null) };
    progress(begun);
    return begun;
  }
  if (engine === 'answers' && outage !== null) {
    progress({ kind: 'engine_back', execution_id: executionId, address: outage.address });
    return null;
  }
  return outage;
}
