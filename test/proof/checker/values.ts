import { createHash } from 'node:crypto';

/*
 * The values the rules compute with, from the spec and the migrations rather than from lexec's
 * code: amounts (read as `unknown`, used only when they are INTEGER cells — bigints), the frozen
 * price and its `ceil_micro_units` rounding, the correlation value a submission carries, and a
 * grouping helper.
 */

const MICRO_UNITS_PER_USD = 1_000_000n;

/** The bigint in an amount cell, or null when it holds anything else. */
export function units(value: unknown): bigint | null {
  return typeof value === 'bigint' ? value : null;
}

/** An exact amount at a decimal scale (0…6) in micro-units, or null when it is not one. */
export function microUnits(exact: unknown, scale: unknown): bigint | null {
  const amount = units(exact);
  const places = units(scale);
  if (amount === null || places === null || places < 0n || places > 6n) return null;
  return amount * 10n ** (6n - places);
}

/** A JSON whole number as the snapshot stores it: a digit string, or a safe integer. */
function wholeNumber(value: unknown): bigint | null {
  if (typeof value === 'string' && /^(0|[1-9][0-9]*)$/.test(value)) return BigInt(value);
  if (typeof value === 'number' && Number.isSafeInteger(value) && value >= 0) return BigInt(value);
  return null;
}

export interface FrozenPrice {
  readonly numerator: bigint;
  readonly denominator: bigint;
  readonly imageCount: bigint;
}

/** The frozen snapshot's rational unit price and image count; null when it has none (a legacy projection, or garbage). */
export function frozenPrice(snapshotJson: string): FrozenPrice | null {
  let snapshot: { unit_price?: { numerator?: unknown; denominator?: unknown }; image_count?: unknown; rounding?: unknown };
  try {
    snapshot = JSON.parse(snapshotJson) as typeof snapshot;
  } catch {
    return null;
  }
  const numerator = wholeNumber(snapshot.unit_price?.numerator);
  const denominator = wholeNumber(snapshot.unit_price?.denominator);
  const imageCount = wholeNumber(snapshot.image_count);
  if (numerator === null || denominator === null || denominator === 0n || imageCount === null || snapshot.rounding !== 'ceil_micro_units') return null;
  return { numerator, denominator, imageCount };
}

/** ceil(images × numerator × 10^6 / denominator): the spec's `ceil_micro_units` rounding. */
export function priceOf(price: FrozenPrice, images: bigint): bigint {
  const numerator = images * price.numerator * MICRO_UNITS_PER_USD;
  return numerator % price.denominator === 0n ? numerator / price.denominator : numerator / price.denominator + 1n;
}

export function modelOf(snapshotJson: string): string | null {
  try {
    const { model } = JSON.parse(snapshotJson) as { model?: unknown };
    return typeof model === 'string' ? model : null;
  } catch {
    return null;
  }
}

/**
 * The correlation value an execution's submission carries as its `seed` (docs/executions.md
 * "Finding a job at the provider"), derived here from its definition: the first four bytes of
 * SHA-256 over `lexec-correlation:v1:<execution id>`, big-endian, with the top bit cleared (31
 * bits, so no provider's signed 32-bit field refuses it).
 */
export function correlationValue(executionId: string): number {
  return createHash('sha256').update(`lexec-correlation:v1:${executionId}`).digest().readUInt32BE(0) & 0x7fff_ffff;
}

export function groupBy<T>(rows: readonly T[], key: (row: T) => string | null): Map<string, T[]> {
  const groups = new Map<string, T[]>();
  for (const row of rows) {
    const k = key(row);
    if (k === null) continue;
    const group = groups.get(k);
    if (group === undefined) groups.set(k, [row]);
    else group.push(row);
  }
  return groups;
}
