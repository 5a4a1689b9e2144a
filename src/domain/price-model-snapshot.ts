import { z } from 'zod';
import { wholeNumber } from './whole-number.js';

/**
 * The complete frozen pricing snapshot an execution is billed by (spec §2 "Receipt"): what was
 * asked for and the exact rational unit price, so a receipt can be checked by anyone later.
 */
export const priceModelSnapshotSchema = z.strictObject({
  snapshot_version: z.literal(1, { error: 'must be 1' }),
  target_id: z.string().min(1).max(200),
  provider: z.string().min(1).max(64),
  model: z.string().min(1).max(200),
  image_size: z.string().min(1).max(64),
  image_count: z.number().int().min(1).max(16),
  currency: z.literal('USD', { error: 'must be "USD"' }),
  unit: z.literal('image', { error: 'must be "image"' }),
  pricing_version: z.string().min(1).max(64),
  unit_price: z.strictObject({
    numerator: wholeNumber({ min: 0n, what: 'the price numerator' }),
    denominator: wholeNumber({ min: 1n, what: 'the price denominator' }),
  }),
  rounding: z.literal('ceil_micro_units', { error: 'must be "ceil_micro_units"' }),
});
export type PriceModelSnapshot = z.output<typeof priceModelSnapshotSchema>;

/** The reduced provider/model/estimated-price projection that legacy (v4.3) receipts carried. */
export const legacyPriceProjectionSchema = z.strictObject({
  provider: z.string().min(1).max(64),
  model: z.string().min(1).max(200),
  estimated_price_cents: wholeNumber({ min: 0n, what: 'the estimated price' }),
});
