import { describe, expect, it } from 'vitest';
import { UserError } from '../../src/errors.js';
import type { OfferedTarget } from '../../src/executor/client/executor-client.js';
import { chooseTarget, IntentRefused, quoteJob, type IntentProblem } from '../../src/stack-client/paid-job/quote.js';
import { quoteForRun } from '../../src/run/quote-for-run.js';

/*
 * What a paid job asks the ledger to authorize (the stack client's quote, for `lexec run` and the
 * agent): the executor's own quote of the request (pricingSnapshot + costUnits), so the hold
 * always covers the executor's admission check exactly — rounding included: the total is rounded
 * up once, not each image. A job the stack does not offer is refused as data; `lexec run` words it
 * in terms of its flags.
 */

function target(overrides: Partial<OfferedTarget> = {}): OfferedTarget {
  return {
    target_id: 'lexec:target:v1:thirds',
    label: 'Thirds',
    provider: 'fal',
    model: 'fal-ai/flux/schnell',
    presets: ['square_hd', 'landscape_16_9'],
    default_image_size: 'square',
    max_image_count: 4,
    pricing: {
      currency: 'USD',
      unit: 'image',
      version: '2026-11-01',
      by_image_size: { square_hd: { numerator: '1', denominator: '3' }, landscape_16_9: { numerator: '3', denominator: '1000' } },
    },
    ...overrides,
  };
}

function refusal(work: () => unknown): UserError {
  try {
    work();
  } catch (error) {
    if (error instanceof UserError) return error;
    throw error;
  }
  throw new Error('expected a refusal');
}

function problem(work: () => unknown): IntentProblem {
  try {
    work();
  } catch (error) {
    if (error instanceof IntentRefused) return error.problem;
    throw error;
  }
  throw new Error('expected a refusal');
}

describe('quoteJob', () => {
  it('quotes count x rational unit price in micro-units, rounded up once on the total (as the executor does)', () => {
    expect(quoteJob(target(), 'square_hd', 1).amountUnits).toBe(333_334n);
    expect(quoteJob(target(), 'square_hd', 2).amountUnits).toBe(666_667n);
    expect(quoteJob(target(), 'square_hd', 3).amountUnits).toBe(1_000_000n);
    expect(quoteJob(target(), 'landscape_16_9', 4).amountUnits).toBe(12_000n);
  });

  it('freezes the same pricing snapshot the executor bills by', () => {
    expect(quoteJob(target(), 'landscape_16_9', 2).snapshot).toEqual({
      snapshot_version: 1,
      target_id: 'lexec:target:v1:thirds',
      provider: 'fal',
      model: 'fal-ai/flux/schnell',
      image_size: 'landscape_16_9',
      image_count: 2,
      currency: 'USD',
      unit: 'image',
      pricing_version: '2026-11-01',
      unit_price: { numerator: 3n, denominator: 1000n },
      rounding: 'ceil_micro_units',
    });
  });

  it('without --size: the default size when it is priced, else the first priced one', () => {
    expect(quoteJob(target({ default_image_size: 'landscape_16_9' }), undefined, 1).imageSize).toBe('landscape_16_9');
    expect(quoteJob(target(), undefined, 1).imageSize).toBe('square_hd');
  });

  it('refuses a size the target does not price and a count above its limit, naming what is allowed', () => {
    expect(problem(() => quoteJob(target(), 'portrait_4_3', 1))).toEqual({ field: 'size', targetId: 'lexec:target:v1:thirds', priced: ['square_hd', 'landscape_16_9'] });
    expect(problem(() => quoteJob(target({ max_image_count: 2 }), 'square_hd', 3))).toEqual({ field: 'count', targetId: 'lexec:target:v1:thirds', max: 2 });
  });
});

describe('chooseTarget', () => {
  const one = target();
  const two = target({ target_id: 'lexec:target:v1:other' });

  it('takes the only target, or the one --target names', () => {
    expect(chooseTarget([one], undefined)).toBe(one);
    expect(chooseTarget([one, two], 'lexec:target:v1:other')).toBe(two);
  });

  it('refuses an unknown target or a choice among several as data, and no target at all', () => {
    expect(problem(() => chooseTarget([one, two], undefined))).toEqual({ field: 'target', reason: 'ambiguous', offered: ['lexec:target:v1:thirds', 'lexec:target:v1:other'] });
    expect(problem(() => chooseTarget([one], 'lexec:target:v1:nope'))).toEqual({ field: 'target', reason: 'unknown', offered: ['lexec:target:v1:thirds'] });
    expect(refusal(() => chooseTarget([], undefined)).code).toBe('no_execution_targets');
  });
});

describe('quoteForRun (lexec run)', () => {
  const one = target();
  const two = target({ target_id: 'lexec:target:v1:other' });

  it('words a refused size or count in terms of --size and --count', () => {
    const size = refusal(() => quoteForRun([one], undefined, 'portrait_4_3', 1));
    expect([size.code, size.exitCode]).toEqual(['invalid_flag_value', 2]);
    expect(size.message).toContain('square_hd, landscape_16_9');
    const count = refusal(() => quoteForRun([target({ max_image_count: 2 })], undefined, 'square_hd', 3));
    expect(count.message).toContain('from 1 to 2');
  });

  it('asks for --target when there are several, and refuses an unknown one or none at all', () => {
    expect(refusal(() => quoteForRun([one, two], undefined, undefined, 1)).code).toBe('target_required');
    expect(refusal(() => quoteForRun([one], 'lexec:target:v1:nope', undefined, 1)).message).toContain('lexec:target:v1:thirds');
    expect(refusal(() => quoteForRun([], undefined, undefined, 1)).code).toBe('no_execution_targets');
  });
});
