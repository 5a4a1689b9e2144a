import { mkdir } from 'node:fs/promises';
import { formatUnits } from '../cli/format-amount.js';
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
 * Polls the execution until it is terminal, reporting each change of state or phase. An executor
 * that stops answering (a crash its supervisor repairs) is asked again for up to
 * UNREACHABLE_WINDOW_MS: the execution goes on without its follower.
 */
export async function followExecution(
  executor: ExecutorClient,
  admitted: ExecutionView,
  options: {
    readonly progress: (event: RunProgress) => void;
    /** Waits between polls (and throws at a deadline or an interrupt). */
    readonly pause: (ms: number) => Promise<void>;
    /** Submits the identical request again. */
    readonly admit: () => Promise<ExecutionView>;
    readonly now: () => number;
  },
): Promise<ExecutionView> {
  let execution = admitted;
  let shown = '';
  let unansweredSince: number | null = null;
  for (let interval = 250; ; interval = Math.min(1_000, Math.round(interval * 1.5))) {
    const now = `${execution.state}/${execution.phase ?? ''}`;
    if (now !== shown) options.progress({ kind: 'execution', execution_id: execution.execution_id, state: execution.state, phase: execution.phase });
    shown = now;
    if (TERMINAL.has(execution.state)) return execution;
    await options.pause(interval);
    try {
      // A pending execution was not scheduled (a race with readiness): the identical request schedules it.
      execution = execution.state === 'pending' ? await options.admit() : await executor.execution(execution.execution_id);
      unansweredSince = null;
    } catch (error) {
      if (!comingBack(error)) throw error;
      unansweredSince ??= options.now();
      if (options.now() - unansweredSince >= UNREACHABLE_WINDOW_MS) throw error;
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
  const artifacts = (await executor.artifacts(id)).sort((a, b) => a.ordinal - b.ordinal);
  for (const artifact of artifacts) {
    options.checkpoint();
    const file = await saveArtifact(options.outDir, id, artifact, () => executor.content(id, artifact));
    files.push(file);
    options.progress({ kind: 'saved', file });
  }
  // The receipt's exact amount is what the ledger settled; it can be less than the quote.
  const spent = { amount_units: receipt.amount_units, units_scale: UNITS_SCALE, currency: receipt.currency, display: formatUnits(receipt.amount_units, receipt.currency) };
  return { spent, files };
}
