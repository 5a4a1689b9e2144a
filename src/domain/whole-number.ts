import { z } from 'zod';
import { MAX_AMOUNT_UNITS, parseWholeNumber } from './money.js';

/*
 * The schema of an exact integer amount at a boundary (configuration, request bodies, a frozen
 * price snapshot). In domain, below config, because the price snapshot (price-model-snapshot.ts),
 * a wire shape of both servers, uses it; src/config/schema-parts.ts offers it beside the other
 * field types. Its messages never repeat the submitted value.
 */

const WHOLE_NUMBER_MESSAGE = 'must be a whole number: a string of digits or a JSON integer (no decimals, signs or exponents)';

/** An exact integer amount, read from a digit string (any size) or a safe JSON integer; never a float. */
export function wholeNumber({ min, what }: { min: bigint; what: string }) {
  return z.union([z.string(), z.number()], { error: WHOLE_NUMBER_MESSAGE }).transform((value, ctx) => {
    const parsed = parseWholeNumber(value);
    if (parsed === null) {
      ctx.addIssue({ code: 'custom', message: WHOLE_NUMBER_MESSAGE });
      return z.NEVER;
    }
    if (parsed < min) {
      ctx.addIssue({ code: 'custom', message: `${what} must be at least ${min}` });
      return z.NEVER;
    }
    if (parsed > MAX_AMOUNT_UNITS) {
      ctx.addIssue({ code: 'custom', message: `${what} is beyond the largest storable amount (${MAX_AMOUNT_UNITS})` });
      return z.NEVER;
    }
    return parsed;
  });
}
