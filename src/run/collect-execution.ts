import { mkdir } from 'node:fs/promises';
import { formatUnits, UNITS_SCALE } from '../domain/money.js';
import { UserError } from '../errors.js';
import type { ExecutionView, ExecutorClient } from '../executor/client/executor-client.js';
import type { FollowEvent } from '../stack-client/paid-job/follow-execution.js';
import type { JobDelivery } from '../stack-client/paid-job/job-delivery.js';
import { jobArtifacts, jobImage } from '../stack-client/paid-job/job-images.js';
import { saveArtifact, type SavedFile } from './save-artifact.js';

/*
 * The end of `lexec run`: a terminal execution's images saved into --out and the exact spend
 * reported, or the reason there are none.
 */

export type RunProgress =
  | { readonly kind: 'quoted'; readonly target_id: string; readonly label: string | null; readonly image_size: string; readonly image_count: number; readonly amount_units: bigint }
  | {
      readonly kind: 'authorization';
      readonly token_id: string;
      readonly status: string;
      readonly amount_units: bigint;
      /** Continued with `--authorization`. */
      readonly reused: boolean;
      /** When the open request this run continues was opened (the same command ran before and its request is still open); null: not one. */
      readonly continued_from: string | null;
    }
  /** Another job's execution took the authorization this run continued; it requests a new one. */
  | { readonly kind: 'authorization_taken'; readonly token_id: string }
  | {
      readonly kind: 'approval_needed';
      readonly token_id: string;
      readonly approve_command: string;
      readonly deny_command: string;
      readonly expires_at: string;
      readonly waiting: boolean;
    }
  | { readonly kind: 'executor_not_ready' }
  | FollowEvent
  | { readonly kind: 'saved'; readonly file: SavedFile }
  /** The execution succeeded with fewer images than asked; `spent` is what the receipt bills. */
  | { readonly kind: 'partial_delivery'; readonly execution_id: string; readonly delivery: JobDelivery; readonly spent: Spent };

export interface Spent {
  readonly amount_units: bigint;
  readonly units_scale: number;
  readonly currency: string;
  readonly display: string;
}

/** A terminal execution: the images saved and the exact spend, or the reason there are none. */
export async function collectExecution(
  executor: ExecutorClient,
  execution: ExecutionView,
  options: {
    /** The profile, named in the commands a parked execution's message gives. */
    readonly profile: string;
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
      nextStep: `Nothing is retried automatically. Check the provider's dashboard for this request (\`lexec executor reconciliation list --profile ${options.profile}\` shows the evidence), then resolve it: \`lexec executor reconciliation resolve ${id} --settle --images-billed <n> --note "…" --profile ${options.profile}\` if the provider billed images, or \`lexec executor reconciliation resolve ${id} --release --note "…" --profile ${options.profile}\` if it charged nothing; or on the console's Reconciliation page (\`lexec stack console --profile ${options.profile}\`).`,
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
  const artifacts = await jobArtifacts(executor, id, again);
  for (const artifact of artifacts) {
    options.checkpoint();
    const file = await saveArtifact(options.outDir, id, artifact, () => jobImage(executor, id, artifact, again));
    files.push(file);
    options.progress({ kind: 'saved', file });
  }
  // The receipt's exact amount is what the ledger settled; it can be less than the quote.
  const spent = { amount_units: receipt.amount_units, units_scale: UNITS_SCALE, currency: receipt.currency, display: formatUnits(receipt.amount_units, receipt.currency) };
  return { spent, files };
}
