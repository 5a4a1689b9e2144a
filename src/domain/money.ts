/**
 * Money is exact: integers (`bigint`) in code, digit strings or JSON integers at the boundary,
 * never floats. Amounts are micro-units (`*_units`, `units_scale` 6) of a currency.
 */

/** Decimal scale of micro-unit amounts. */
export const UNITS_SCALE = 6;

/** Largest amount a micro-unit column can hold (SQLite INTEGER is a signed 64-bit integer). */
export const MAX_AMOUNT_UNITS = 9_223_372_036_854_775_807n;

/** Currencies lexec prices and settles in. Pricing is USD only in this release. */
export const CURRENCIES = ['USD'] as const;
export type Currency = (typeof CURRENCIES)[number];

/** An exact amount of a currency in micro-units. */
export interface Amount {
  readonly amount_units: bigint;
  readonly units_scale: typeof UNITS_SCALE;
  readonly currency: Currency;
}

/** An exact rational number of currency units, e.g. 3/1000 USD per image. */
export interface Rational {
  readonly numerator: bigint;
  readonly denominator: bigint;
}

const DIGITS = /^(?:0|[1-9][0-9]*)$/;

/**
 * Reads an integer from a JSON value: a string of decimal digits (any size) or a JSON number that
 * is a safe integer. Returns null for anything else — floats, exponents, signs, blanks — so the
 * caller can report the field without echoing the value.
 */
export function parseWholeNumber(value: unknown): bigint | null {
  if (typeof value === 'string') return DIGITS.test(value) ? BigInt(value) : null;
  if (typeof value === 'number' && Number.isSafeInteger(value) && value >= 0) return BigInt(value);
  return null;
}

/** Micro-units per cent. */
const UNITS_PER_CENT = 10_000n;

/** The whole-cent projection of a micro-unit amount, rounded up: never understated. */
export function centsCeil(units: bigint): bigint {
  return (units + UNITS_PER_CENT - 1n) / UNITS_PER_CENT;
}

/** Micro-units of a whole-cent amount (exact: x 10^4). */
export function unitsFromCents(cents: bigint): bigint {
  return cents * UNITS_PER_CENT;
}

const UNITS_PER_WHOLE = 10n ** BigInt(UNITS_SCALE);

/** A micro-unit amount as exact decimal text: 1500000n → "1.500000" (a CSV's amount). Never a float. */
export function decimalUnits(units: bigint): string {
  const sign = units < 0n ? '-' : '';
  const magnitude = units < 0n ? -units : units;
  const fraction = (magnitude % UNITS_PER_WHOLE).toString().padStart(UNITS_SCALE, '0');
  return `${sign}${(magnitude / UNITS_PER_WHOLE).toString()}.${fraction}`;
}

/** A micro-unit amount as exact decimal text for people: 2500000n → "2.500000 USD". Never a float. */
export function formatUnits(units: bigint, currency: string): string {
  return `${decimalUnits(units)} ${currency}`;
}

/**
 * An exact amount written at `scale` decimal places, in micro-units: a legacy (scale 2) cent
 * amount of 300 is 3,000,000 micro-units. Null when the amount is finer than a micro-unit (a
 * scale above 6 with digits beyond the sixth place), which no micro-unit display can show.
 */
export function atUnitsScale(amount: bigint, scale: number): bigint | null {
  if (!Number.isInteger(scale) || scale < 0) return null;
  if (scale <= UNITS_SCALE) return amount * 10n ** BigInt(UNITS_SCALE - scale);
  const divisor = 10n ** BigInt(scale - UNITS_SCALE);
  return amount % divisor === 0n ? amount / divisor : null;
}
