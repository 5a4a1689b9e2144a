import { z } from 'zod';
import { MAX_IMAGES_PER_EXECUTION } from '../config/executor-config-schema.js';
import { freeText } from '../../config/schema-parts.js';
import { MAX_PROMPT_CHARS } from '../../domain/prompt-text.js';

/*
 * Execution request, schema version 2 (spec §2). Every field is immutable once an execution
 * exists for its token: a resubmission must be identical or it conflicts.
 */

export { MAX_PROMPT_CHARS };

/**
 * The four legacy target fields, accepted together in place of `target_id`: the provider, the
 * provider model, the pricing version and the target version (`v1`) that a pre-target-id client
 * sent. They select the one active target with exactly those values.
 */
export const LEGACY_TARGET_FIELDS = ['provider', 'model', 'pricing_version', 'target_version'] as const;

const legacyText = z.string({ error: 'must be a string' }).min(1, 'must not be empty').max(200, 'must be at most 200 characters');

export const executionRequestSchema = z.strictObject({
  schema_version: z.literal(2, { error: 'must be 2' }),
  spend_auth_token_id: z.uuid({ error: 'must be a UUID' }),
  input: z.strictObject({
    prompt: freeText(
      z
        .string({ error: 'must be a string' })
        .min(1, 'must not be empty')
        .max(MAX_PROMPT_CHARS, `must be at most ${MAX_PROMPT_CHARS} characters`),
    ),
    image_count: z
      .number({ error: 'must be a whole number' })
      .int('must be a whole number')
      .min(1, 'must be at least 1')
      .max(MAX_IMAGES_PER_EXECUTION, `must be at most ${MAX_IMAGES_PER_EXECUTION}`),
    image_size: z.string({ error: 'must be a string' }).min(1).max(64).optional(),
  }),
  input_schema_version: z.literal(1, { error: 'must be 1' }),
  target_id: z.string({ error: 'must be a string' }).min(1).max(200).optional(),
  provider: legacyText.optional(),
  model: legacyText.optional(),
  pricing_version: legacyText.optional(),
  target_version: legacyText.optional(),
});
export type ExecutionRequest = z.output<typeof executionRequestSchema>;

/** How the request names its target: by id, or by the four legacy fields. */
export type TargetSelector =
  | { readonly kind: 'target_id'; readonly targetId: string }
  | { readonly kind: 'legacy'; readonly provider: string; readonly model: string; readonly pricingVersion: string; readonly targetVersion: string };

/** The selector of a parsed request, or the field paths that make it ambiguous or incomplete. */
export function targetSelector(request: ExecutionRequest): { selector: TargetSelector } | { fields: string[]; reason: 'target_required' | 'target_ambiguous' } {
  const legacyPresent = LEGACY_TARGET_FIELDS.filter((field) => request[field] !== undefined);
  if (request.target_id !== undefined) {
    return legacyPresent.length === 0 ? { selector: { kind: 'target_id', targetId: request.target_id } } : { fields: ['target_id', ...legacyPresent], reason: 'target_ambiguous' };
  }
  if (legacyPresent.length === 0) return { fields: ['target_id'], reason: 'target_required' };
  const missing = LEGACY_TARGET_FIELDS.filter((field) => request[field] === undefined);
  if (missing.length > 0) return { fields: missing, reason: 'target_required' };
  return {
    selector: {
      kind: 'legacy',
      provider: request.provider ?? '',
      model: request.model ?? '',
      pricingVersion: request.pricing_version ?? '',
      targetVersion: request.target_version ?? '',
    },
  };
}

/** Leaf paths whose values differ between two JSON documents (for immutable-field conflicts). */
export function changedPaths(before: unknown, after: unknown, path = ''): string[] {
  const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);
  if (isObject(before) && isObject(after)) {
    const keys = [...new Set([...Object.keys(before), ...Object.keys(after)])].sort();
    return keys.flatMap((key) => changedPaths(before[key], after[key], path === '' ? key : `${path}.${key}`));
  }
  return JSON.stringify(before) === JSON.stringify(after) ? [] : [path === '' ? '(document)' : path];
}
