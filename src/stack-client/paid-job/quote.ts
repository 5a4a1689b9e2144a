import { executionTargetSchema, type ExecutionTarget, type ImageSizePreset } from '../../executor/config/executor-config-schema.js';
import type { PriceModelSnapshot } from '../../domain/price-model-snapshot.js';
import { UserError } from '../../errors.js';
import type { OfferedTarget } from '../../executor/client/executor-client.js';
import { costUnits, pricingSnapshot, selectTarget } from '../../executor/domain/pricing.js';

/*
 * What a paid job asks the ledger for: the exact cost of the request under the target's price,
 * computed by the executor's own pricing code (`pricingSnapshot` + `costUnits`: images x
 * rational unit price, rounded up to a micro-unit). The executor quotes the same request the same
 * way at admission, so the authorization always covers it exactly. Pure: no I/O.
 */

export interface JobQuote {
  readonly target: ExecutionTarget;
  readonly imageSize: ImageSizePreset;
  readonly imageCount: number;
  readonly snapshot: PriceModelSnapshot;
  readonly amountUnits: bigint;
}

/**
 * A job the stack does not offer, as data: each client words it for its own surface (`lexec
 * run`: flags; the agent: tool arguments).
 */
export type IntentProblem =
  | { readonly field: 'target'; readonly reason: 'unknown' | 'ambiguous'; readonly offered: readonly string[] }
  | { readonly field: 'size'; readonly targetId: string; readonly priced: readonly string[] }
  | { readonly field: 'count'; readonly targetId: string; readonly max: number };

export class IntentRefused extends Error {
  constructor(readonly problem: IntentProblem) {
    super(`the stack does not offer this ${problem.field}`);
  }
}

/** The target to run on: the only one offered, or the one `wanted` names. */
export function chooseTarget(offered: readonly OfferedTarget[], wanted: string | undefined): OfferedTarget {
  const ids = offered.map((target) => target.target_id);
  if (offered.length === 0) {
    throw new UserError('no_execution_targets', 'The executor of this stack offers no execution target (its providers are disabled or no target is configured).', {
      nextStep: 'Add an [[execution_targets]] table to the profile, then `lexec stack render`, stop, activate and start the stack.',
    });
  }
  if (wanted !== undefined) {
    const target = offered.find((candidate) => candidate.target_id === wanted);
    if (target === undefined) throw new IntentRefused({ field: 'target', reason: 'unknown', offered: ids });
    return target;
  }
  const [only] = offered;
  if (offered.length > 1 || only === undefined) {
    throw new IntentRefused({ field: 'target', reason: 'ambiguous', offered: ids });
  }
  return only;
}

/** The offered target as the pricing code knows targets (the executor's own configuration schema). */
function asExecutionTarget(offered: OfferedTarget): ExecutionTarget {
  const parsed = executionTargetSchema.safeParse({
    target_id: offered.target_id,
    ...(offered.label === null ? {} : { label: offered.label }),
    provider: offered.provider,
    model: offered.model,
    presets: offered.presets,
    max_image_count: offered.max_image_count,
    pricing: offered.pricing,
  });
  if (!parsed.success) {
    throw new UserError('executor_bad_response', `The executor offered target ${offered.target_id} with a price lexec cannot read.`, {
      nextStep: 'Check that the executor and this CLI are the same version (`lexec version`, `lexec stack status`).',
    });
  }
  return parsed.data;
}

/**
 * Quotes `count` images of `size` (default: the target's default size when priced, else its
 * first priced one) on the target. A size or a count the target does not offer is refused
 * (IntentRefused) before anything is requested from the ledger.
 */
export function quoteJob(offered: OfferedTarget, size: string | undefined, count: number): JobQuote {
  const target = asExecutionTarget(offered);
  const priced = target.presets.filter((preset) => target.pricing.by_image_size[preset] !== undefined);
  const wanted = size ?? (priced.includes(offered.default_image_size as ImageSizePreset) ? offered.default_image_size : priced[0]);
  const selection = selectTarget([target], { kind: 'target_id', targetId: target.target_id }, wanted);
  if (!selection.ok) {
    throw new IntentRefused({ field: 'size', targetId: target.target_id, priced });
  }
  if (!Number.isInteger(count) || count < 1 || count > target.max_image_count) {
    throw new IntentRefused({ field: 'count', targetId: target.target_id, max: target.max_image_count });
  }
  const snapshot = pricingSnapshot(target, selection.imageSize, count);
  return { target, imageSize: selection.imageSize, imageCount: count, snapshot, amountUnits: costUnits(snapshot, count) };
}
