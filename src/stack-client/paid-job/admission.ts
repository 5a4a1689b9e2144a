import { UserError } from '../../errors.js';
import type { ExecutionView, ExecutorClient } from '../../executor/client/executor-client.js';
import type { LedgerAuthorization } from '../../ledger/wire/answers.js';
import { refuseIfUnusableAfterConflict } from './usable-authorization.js';

/*
 * Admission of a paid job, and reads that outlive an executor restart — the retry rules every
 * client of a stack follows (`lexec run`, the agent's generate_images and get_images).
 */

/** How long a 503 not_ready admission is retried ("briefly"): readiness grace is 30 s. */
export const NOT_READY_WINDOW_MS = 45_000;

/** How long apart a 503 not_ready admission is tried again. */
export const NOT_READY_RETRY_MS = 1_000;

/**
 * Failures of an executor that is coming back: not admitting right now (503 not_ready), or not
 * answering at all — a supervised executor that crashed is restarted within seconds.
 */
const COMING_BACK = new Set(['executor_not_ready', 'executor_unreachable']);

/** How long a follow keeps asking an executor that does not answer before it gives up. */
export const UNREACHABLE_WINDOW_MS = 45_000;

export const comingBack = (error: unknown) => error instanceof UserError && COMING_BACK.has(error.code);

/**
 * Submits the execution request, trying it again while the executor is not ready or does not
 * answer, until `until`; `onNotReady` is told once. Sending the identical request again is safe
 * whatever became of the first (refused, lost, or admitted with its answer lost): the executor
 * answers it as a replay of what it created, and never claims or runs anything twice. Any other
 * refusal is thrown.
 */
async function admitExecution(
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

/**
 * Admits the job's execution request (admitExecution). A refusal as a conflict may mean the
 * authorization became unusable since it was read (it expired, or the executor released it as an
 * orphan claim while this client was retrying): it is read again and the job ends with that
 * reason (`again`: how this client asks anew); otherwise the refusal is thrown as it is.
 */
export async function admitJob(
  executor: ExecutorClient,
  body: unknown,
  options: {
    readonly until: number;
    readonly now: () => number;
    readonly onNotReady: () => void;
    readonly wait: (ms: number) => Promise<void>;
    readonly reread: () => Promise<LedgerAuthorization>;
    readonly again: string;
  },
): Promise<ExecutionView> {
  try {
    return await admitExecution(executor, body, options);
  } catch (error) {
    await refuseIfUnusableAfterConflict(error, options.reread, options.again);
    throw error;
  }
}
