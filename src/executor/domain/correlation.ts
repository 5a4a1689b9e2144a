import { createHash } from 'node:crypto';

/*
 * The provider request's own correlation value (docs/executions.md "Finding a job at the
 * provider"). fal's queue takes no client request id and no metadata, but every image model
 * takes a `seed` and reports it in its result, and fal's request history shows the input: the
 * executor sends a seed derived from the execution id, so a job at the provider can be matched to
 * its execution when the provider's answer (and its request id) never arrived. Pure and stable:
 * the same execution always gets the same seed; 31 bits, so no provider's signed 32-bit field
 * refuses it.
 */

/** The correlation field and its value for an execution's provider submission. */
export interface Correlation {
  readonly field: 'seed';
  readonly value: number;
}

export function correlationOf(executionId: string): Correlation {
  const digest = createHash('sha256').update(`lexec-correlation:v1:${executionId}`).digest();
  return { field: 'seed', value: digest.readUInt32BE(0) & 0x7fff_ffff };
}
