import { UNITS_SCALE } from '../domain/money.js';

const UNITS_PER_WHOLE = 10n ** BigInt(UNITS_SCALE);

/** A micro-unit amount as exact decimal text for people: 2500000n → "2.500000 USD". Never a float. */
export function formatUnits(units: bigint, currency: string): string {
  const sign = units < 0n ? '-' : '';
  const magnitude = units < 0n ? -units : units;
  const fraction = (magnitude % UNITS_PER_WHOLE).toString().padStart(UNITS_SCALE, '0');
  return `${sign}${(magnitude / UNITS_PER_WHOLE).toString()}.${fraction} ${currency}`;
}
