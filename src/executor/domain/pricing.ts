import type { ExecutionTarget, ImageSizePreset } from '../config/executor-config-schema.js';
import type { PriceModelSnapshot } from '../../domain/price-model-snapshot.js';
import type { TargetSelector } from './execution-request.js';

const MICRO_UNITS_PER_USD = 1_000_000n;

export type Selection =
  | { readonly ok: true; readonly target: ExecutionTarget; readonly imageSize: ImageSizePreset }
  | { readonly ok: false; readonly reason: 'target_not_selectable' | 'pricing_selector_not_matched'; readonly fields: readonly string[] };

/**
 * Picks the operator-approved target a request names and the priced preset it asks for.
 * `image_size` defaults to the target's first preset. Pure: `targets` are the active targets.
 */
export function selectTarget(targets: readonly ExecutionTarget[], selector: TargetSelector, imageSize: string | undefined): Selection {
  const target =
    selector.kind === 'target_id'
      ? targets.find((candidate) => candidate.target_id === selector.targetId)
      : targets.find(
          (candidate) =>
            candidate.provider === selector.provider &&
            candidate.model === selector.model &&
            candidate.pricing.version === selector.pricingVersion &&
            candidate.target_id.split(':')[2] === selector.targetVersion,
        );
  if (target === undefined) {
    return { ok: false, reason: 'target_not_selectable', fields: selector.kind === 'target_id' ? ['target_id'] : ['provider', 'model', 'pricing_version', 'target_version'] };
  }
  const size = (imageSize ?? target.presets[0]) as ImageSizePreset;
  if (!target.presets.includes(size) || target.pricing.by_image_size[size] === undefined) {
    return { ok: false, reason: 'pricing_selector_not_matched', fields: ['input.image_size'] };
  }
  return { ok: true, target, imageSize: size };
}

/** The complete frozen pricing snapshot an execution is admitted, run and billed with. */
export function pricingSnapshot(target: ExecutionTarget, imageSize: ImageSizePreset, imageCount: number): PriceModelSnapshot {
  const price = target.pricing.by_image_size[imageSize];
  if (price === undefined) throw new Error('pricingSnapshot needs a priced preset (selectTarget checks it)');
  return {
    snapshot_version: 1,
    target_id: target.target_id,
    provider: target.provider,
    model: target.model,
    image_size: imageSize,
    image_count: imageCount,
    currency: 'USD',
    unit: 'image',
    pricing_version: target.pricing.version,
    unit_price: { numerator: price.numerator, denominator: price.denominator },
    rounding: 'ceil_micro_units',
  };
}

/**
 * The exact cost of `images` images under a snapshot, in micro-units of USD: images x
 * numerator / denominator USD, rounded up to the next micro-unit (never understated).
 */
export function costUnits(snapshot: PriceModelSnapshot, images: number): bigint {
  const numerator = BigInt(images) * snapshot.unit_price.numerator * MICRO_UNITS_PER_USD;
  const { denominator } = snapshot.unit_price;
  return (numerator + denominator - 1n) / denominator;
}

/**
 * How many images a kept receipt's amount prices under the frozen pricing: the delivered count
 * when it matches (several counts can round to one amount), else the smallest that does; null
 * when none does (a legacy receipt in cents). Reconciliation records it; clients report it
 * (src/stack-client/paid-job/job-delivery.ts).
 */
export function imagesPricedBy(snapshot: PriceModelSnapshot, amountUnits: bigint | null, delivered: number): number | null {
  if (amountUnits === null) return null;
  if (delivered > 0 && costUnits(snapshot, delivered) === amountUnits) return delivered;
  for (let images = 1; images <= snapshot.image_count; images += 1) if (costUnits(snapshot, images) === amountUnits) return images;
  return null;
}
