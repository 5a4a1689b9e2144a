import { z } from 'zod';
import { UNITS_SCALE } from '../../domain/money.js';

/* The parts every ledger answer schema is made of (answers.ts, answers-alerts-and-reports.ts). */

/** An amount: a decimal digit string, read as bigint (a JSON number is refused: it may already have lost precision). */
export const amount = z
  .string()
  .regex(/^\d{1,30}$/, 'must be a decimal digit string')
  .transform((digits) => BigInt(digits));

export const timestamp = z.iso.datetime();
export const scale = z.literal(UNITS_SCALE);

/** A field a newer ledger added: absent from an older one's answer, read as null. */
export const added = <T extends z.ZodType>(schema: T) =>
  schema
    .nullable()
    .optional()
    .transform((value) => value ?? null);
