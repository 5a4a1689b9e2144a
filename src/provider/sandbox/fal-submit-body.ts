import { z } from 'zod';
import { IMAGE_SIZE_PRESETS, MAX_IMAGES_PER_EXECUTION, type ImageSizePreset } from '../image-sizes.js';

/*
 * The text-to-image input the sandbox accepts, and fal's way of refusing it: 422 with a
 * FastAPI/pydantic `{"detail":[{loc, msg, type}]}` body. pydantic also sends `input` (the
 * submitted value); the sandbox never does, so a prompt or a pasted key is never echoed.
 */

export interface SubmitInput {
  readonly prompt: string;
  readonly imageSize: ImageSizePreset;
  readonly numImages: number;
  /** The caller's seed, when it chose one. */
  readonly seed: number | undefined;
}

/** One entry of a fal 422 `detail` list. */
export interface ValidationDetail {
  readonly loc: readonly (string | number)[];
  readonly msg: string;
  readonly type: string;
}

export const MAX_PROMPT_CHARS = 10_000;

// Unknown fields pass, as at fal (pydantic ignores extras): the submission log shows what counts.
const submitBody = z.looseObject({
  prompt: z.string().min(1).max(MAX_PROMPT_CHARS),
  image_size: z.enum(IMAGE_SIZE_PRESETS).default('landscape_4_3'),
  num_images: z.int().min(1).max(MAX_IMAGES_PER_EXECUTION).default(1),
  seed: z.int().min(0).max(0xffff_ffff).optional(),
});

const TYPE_NAMES: Record<string, [type: string, msg: string]> = {
  string: ['string_type', 'Input should be a valid string'],
  int: ['int_type', 'Input should be a valid integer'],
  number: ['int_type', 'Input should be a valid integer'],
  object: ['model_attributes_type', 'Input should be a valid dictionary or object to extract fields from'],
};

function detailFor(issue: z.core.$ZodIssue): ValidationDetail {
  const loc = ['body', ...issue.path.map((part) => (typeof part === 'number' ? part : String(part)))];
  const input = 'input' in issue ? issue.input : null;
  switch (issue.code) {
    case 'invalid_type': {
      if (input === undefined) return { loc, msg: 'Field required', type: 'missing' };
      const [type, msg] = TYPE_NAMES[issue.expected] ?? ['value_error', `Input should be a valid ${issue.expected}`];
      return { loc, msg, type };
    }
    case 'invalid_value':
      return { loc, msg: `Input should be ${issue.values.map((value) => `'${String(value)}'`).join(', ')}`, type: 'enum' };
    case 'too_small':
      return issue.origin === 'string'
        ? { loc, msg: `String should have at least ${String(issue.minimum)} character${issue.minimum === 1 ? '' : 's'}`, type: 'string_too_short' }
        : { loc, msg: `Input should be greater than or equal to ${String(issue.minimum)}`, type: 'greater_than_equal' };
    case 'too_big':
      return issue.origin === 'string'
        ? { loc, msg: `String should have at most ${String(issue.maximum)} characters`, type: 'string_too_long' }
        : { loc, msg: `Input should be less than or equal to ${String(issue.maximum)}`, type: 'less_than_equal' };
    default:
      return { loc, msg: 'Value error', type: 'value_error' };
  }
}

/** pydantic's answer for an input a model does not declare, when the model forbids extras. */
const SEED_FORBIDDEN: ValidationDetail = { loc: ['body', 'seed'], msg: 'Extra inputs are not permitted', type: 'extra_forbidden' };

/**
 * Parses a decoded JSON body; on failure returns the fal 422 details (paths and rules only).
 * `takesSeed` false: the model declares no `seed` and forbids extras, so a body with one is
 * refused as such a fal endpoint refuses it (`--seedless-model`).
 */
export function parseSubmitBody(body: unknown, takesSeed = true): { ok: true; input: SubmitInput } | { ok: false; detail: ValidationDetail[] } {
  const parsed = submitBody.safeParse(body, { reportInput: true });
  if (!parsed.success) return { ok: false, detail: parsed.error.issues.map(detailFor) };
  if (!takesSeed && typeof body === 'object' && body !== null && 'seed' in body) return { ok: false, detail: [SEED_FORBIDDEN] };
  const { prompt, image_size: imageSize, num_images: numImages, seed } = parsed.data;
  return { ok: true, input: { prompt, imageSize, numImages, seed } };
}

/** The 422 detail for a body that is not JSON at all. */
export const JSON_INVALID_DETAIL: ValidationDetail[] = [{ loc: ['body'], msg: 'JSON decode error', type: 'json_invalid' }];
