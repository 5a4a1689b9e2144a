import { priceModelSnapshotSchema } from '../../domain/price-model-snapshot.js';
import type { ExecutionView } from '../../executor/client/executor-client.js';
import { imagesPricedBy } from '../../executor/domain/pricing.js';

/*
 * What a succeeded execution delivered against what was asked, and how many images its receipt
 * bills: a provider can return fewer images than asked (the executor stores and bills what came),
 * which every client reports as a partial delivery, never as a plain success
 * (docs/decisions.md "A partial delivery is not a success"). Pure: reads the execution's view.
 */

export interface JobDelivery {
  /** Images the execution asked for (its frozen pricing's count). */
  readonly requested: number;
  /** Images stored for it. */
  readonly delivered: number;
  /** Images its receipt's exact amount prices under the frozen pricing; null without a receipt, or one that prices no whole count. */
  readonly billed: number | null;
  /** Fewer images than asked. */
  readonly partial: boolean;
}

/**
 * The delivery of a succeeded execution; null before it succeeded (or when it failed), and when
 * its pricing snapshot is not one this client reads (a migrated legacy execution).
 */
export function jobDelivery(execution: Pick<ExecutionView, 'state' | 'artifact_count' | 'receipt' | 'pricing_snapshot'>): JobDelivery | null {
  const snapshot = priceModelSnapshotSchema.safeParse(execution.pricing_snapshot);
  if (execution.state !== 'succeeded' || !snapshot.success) return null;
  const requested = snapshot.data.image_count;
  const delivered = execution.artifact_count;
  const billed = execution.receipt === null ? null : imagesPricedBy(snapshot.data, execution.receipt.amount_units, delivered);
  return { requested, delivered, billed, partial: delivered < requested };
}
