import { UserError } from '../../errors.js';
import type { ExecutionView, ExecutorClient, ExecutorReadiness } from '../../executor/client/executor-client.js';
import type { LedgerAuthorization } from '../../ledger/wire/answers.js';
import { refuseIfUnusableAfterConflict, type WhenSuspended } from './usable-authorization.js';

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
 * Reasons of a not-ready executor that waiting does not fix (docs/readiness.md): a full disk, a
 * task queue another installation polls. The operator must act, so a client says so at once.
 */
const NEEDS_THE_OPERATOR = new Set(['disk_full', 'task_queue_shared']);

function cannotAdmit(url: string, readiness: Extract<ExecutorReadiness, { ready: false }>): UserError {
  const status = 'lexec stack status';
  if (readiness.reason === 'disk_full') {
    const where = readiness.path === undefined ? 'its data directory' : readiness.path;
    return new UserError('executor_disk_full', `The stack's executor cannot write: the disk holding ${where} is full (disk_full). It admits no new executions until there is room.`, {
      nextStep: `Free space on the filesystem of ${where} (\`lexec stack doctor\` shows the free space); the executor admits again by itself, \`${status}\` shows when.`,
    });
  }
  return new UserError('executor_not_ready', `The executor at ${url} admits no new executions (${readiness.reason}), and waiting does not change that.`, {
    nextStep: `\`${status}\` and docs/readiness.md say what to change.`,
  });
}

/**
 * Refuses before anything is requested or claimed when the executor says it cannot admit for a
 * reason waiting does not fix (a full disk: issue 26), so no authorization is held for a job that
 * cannot run. Any other answer — ready, not ready for a while, not answering — lets the job go on:
 * its admission retries those (admitExecution).
 */
export async function refuseIfExecutorCannotAdmit(executor: ExecutorClient): Promise<void> {
  const readiness = await executor.readiness().catch(() => null);
  if (readiness === null || readiness.ready || !NEEDS_THE_OPERATOR.has(readiness.reason)) return;
  throw cannotAdmit(executor.url, readiness);
}

/**
 * Submits the execution request, trying it again while the executor is not ready or does not
 * answer, until `until` — but not when it is not ready for a reason waiting cannot fix
 * (refuseIfExecutorCannotAdmit); `onNotReady` is told once. Sending the identical request again is safe
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
      // Retrying cannot fix a full disk: stop early and say what can.
      if (error instanceof UserError && error.code === 'executor_not_ready') await refuseIfExecutorCannotAdmit(executor);
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
    /** How this client words a cancellation by an operator's suspension of the agent (default: resume, then `again`). */
    readonly suspended?: WhenSuspended;
  },
): Promise<ExecutionView> {
  try {
    return await admitExecution(executor, body, options);
  } catch (error) {
    await refuseIfUnusableAfterConflict(error, options.reread, options.again, options.suspended);
    throw error;
  }
}
