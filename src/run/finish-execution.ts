import { mkdir } from 'node:fs/promises';
import { formatUnits } from '../domain/money.js';
import { UNITS_SCALE } from '../domain/money.js';
import { UserError } from '../errors.js';
import type { ExecutionView, ExecutorClient } from '../executor/client/executor-client.js';
import { saveArtifact, type SavedFile } from './save-artifact.js';

/*
 * The second half of `lexec run`: follow an admitted execution to a terminal state, then either
 * save its images and report the exact spend, or end with the reason there are none.
 */

export type RunProgress =
  | { readonly kind: 'quoted'; readonly target_id: string; readonly label: string | null; readonly image_size: string; readonly image_count: number; readonly amount_units: bigint }
  | { readonly kind: 'authorization'; readonly token_id: string; readonly status: string; readonly amount_units: bigint; readonly reused: boolean }
  | {
      readonly kind: 'approval_needed';
      readonly token_id: string;
      readonly approve_command: string;
      readonly deny_command: string;
      readonly expires_at: string;
      readonly waiting: boolean;
    }
  | { readonly kind: 'executor_not_ready' }
  | { readonly kind: 'execution'; readonly execution_id: string; readonly state: string; readonly phase: string | null }
  | { readonly kind: 'saved'; readonly file: SavedFile };

export interface Spent {
  readonly amount_units: bigint;
  readonly units_scale: number;
  readonly currency: string;
  readonly display: string;
}

const TERMINAL = new Set(['succeeded', 'failed', 'reconciliation']);

/** How long apart a 503 not_ready admission is tried again. */
export const NOT_READY_RETRY_MS = 1_000;

/**
 * Failures of an executor that is coming back: not admitting right now (503 not_ready), or not
 * answering at all — a supervised executor that crashed is restarted within seconds.
 */
const COMING_BACK = new Set(['executor_not_ready', 'executor_unreachable']);

/** How long a follow keeps asking an executor that does not answer before it gives up. */
export const UNREACHABLE_WINDOW_MS = 45_000;

const comingBack = (error: unknown) => error instanceof UserError && COMING_BACK.has(error.code);

/**
 * Submits the execution request, trying it again while the executor is not ready or does not
 * answer, until `until`; `onNotReady` is told once. Sending the identical request again is safe
 * whatever became of the first (refused, lost, or admitted with its answer lost): the executor
 * answers it as a replay of what it created, and never claims or runs anything twice. Any other
 * refusal is thrown.
 */
export async function admitExecution(
  executor: ExecutorClient,
  body: unknown,
  options: { readonly until: number; readonly now: () => number; readonly onNotReady: () => void; readonly wait: (ms: number) => Promise<void> },
): Promise<ExecutionView> {
  for (let told = false; ; ) {
    try {
      return (await executor.submit(body)).execution;
    } catch (error) {
      if (!comingBack(error) || options.now() >= options.until) throw error;
      if (!told) options.onNotReady();
      told = true;
      await options.wait(NOT_READY_RETRY_MS);
    }
  }
}

/**
 * Asks a read again while the executor is coming back — not answering (a crash its supervisor
 * repairs, a restart) or not ready — for up to UNREACHABLE_WINDOW_MS from the first failure, as
 * the follow does: the artifact listing and an image's bytes are reads, safe to repeat. Any other
 * failure is thrown at once; so is the last one when the window is over. `pause` may throw (a
 * deadline, an interrupt).
 */
export async function askThroughRestart<T>(ask: () => Promise<T>, options: { readonly now: () => number; readonly pause: (ms: number) => Promise<void> }): Promise<T> {
  let unansweredSince: number | null = null;
  let interval = 250;
  for (;;) {
    try {
      return await ask();
    } catch (error) {
      if (!comingBack(error)) throw error;
      unansweredSince ??= options.now();
      if (options.now() - unansweredSince >= UNREACHABLE_WINDOW_MS) throw error;
      await options.pause(interval);
      interval = Math.min(1_000, Math.round(interval * 1.5));
    }
  }
}

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
    readonly progress: (event: RunProgress) => void;
    /** Waits between requests (and throws at a deadline or an interrupt). */
    readonly pause: (ms: number) => Promise<void>;
    /** Submits the identical request again. */
    readonly admit: () => Promise<ExecutionView>;
    readonly now: () => number;
    /** How long the follower may still wait in all, in ms (the run's own deadline). */
    readonly remainingMs?: () => number;
    /** An interrupt: aborts a wait in progress (a read, so always safe), then `pause` reports it. */
    readonly signal?: AbortSignal;
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
      unansweredSince ??= options.now();
      if (options.now() - unansweredSince >= UNREACHABLE_WINDOW_MS) throw error;
      await options.pause(interval);
      interval = Math.min(1_000, Math.round(interval * 1.5));
    }
  }
}

/** A terminal execution: the images saved and the exact spend, or the reason there are none. */
export async function collectExecution(
  executor: ExecutorClient,
  execution: ExecutionView,
  options: {
    readonly outDir: string;
    readonly progress: (event: RunProgress) => void;
    /** A safe point between files (throws at a deadline or an interrupt). */
    readonly checkpoint: () => void;
    /** Waits between tries of a download the executor did not answer (throws at a deadline or an interrupt). */
    readonly pause: (ms: number) => Promise<void>;
    readonly now: () => number;
  },
): Promise<{ spent: Spent; files: SavedFile[] }> {
  const id = execution.execution_id;
  const reason = execution.state_reason ?? 'no reason given';
  if (execution.state === 'failed') {
    throw new UserError('execution_failed', `Execution ${id} failed before any charge (${reason}); its authorization was released and nothing was spent.`, {
      nextStep: `Run \`lexec run\` again to try once more; \`lexec stack logs --component executor --execution-id ${id}\` shows what happened.`,
    });
  }
  if (execution.state === 'reconciliation') {
    throw new UserError('execution_in_reconciliation', `Execution ${id} needs a human: ${reason}. ${execution.recommended_action.description}`, {
      nextStep: 'Nothing is retried automatically; resolve it on the executor\'s reconciliation route (docs/executions.md "Resolving a reconciliation").',
    });
  }
  const receipt = execution.receipt;
  if (receipt === null) {
    throw new UserError('executor_bad_response', `The executor reports execution ${id} succeeded without a receipt.`, { nextStep: 'Check that the executor and this CLI are the same version.' });
  }
  await mkdir(options.outDir, { recursive: true });
  const files: SavedFile[] = [];
  // An executor restarting between the final state and the download is waited for, as the follow waits.
  const again = { now: options.now, pause: options.pause };
  const artifacts = (await askThroughRestart(() => executor.artifacts(id), again)).sort((a, b) => a.ordinal - b.ordinal);
  for (const artifact of artifacts) {
    options.checkpoint();
    const file = await saveArtifact(options.outDir, id, artifact, () => askThroughRestart(() => executor.content(id, artifact), again));
    files.push(file);
    options.progress({ kind: 'saved', file });
  }
  // The receipt's exact amount is what the ledger settled; it can be less than the quote.
  const spent = { amount_units: receipt.amount_units, units_scale: UNITS_SCALE, currency: receipt.currency, display: formatUnits(receipt.amount_units, receipt.currency) };
  return { spent, files };
}
