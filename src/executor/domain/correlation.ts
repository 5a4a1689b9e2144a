import { createHash } from 'node:crypto';

/*
 * The provider request's own correlation value (docs/executions.md "Finding a job at the
 * provider"). fal's queue takes no client request id and no metadata, but its image models
 * take a `seed` and reports it in its result, and fal's request history shows the input: the
 * executor sends a seed derived from the execution id, so a job at the provider can be matched to
 * its execution when the provider's answer (and its request id) never arrived. Pure and stable:
 * the same execution always gets the same seed; 31 bits, so no provider's signed 32-bit field
 * refuses it. A target whose model refuses a `seed` it does not know sends none
 * (docs/configuration.md `send_seed`); its jobs are then found by their submit window alone.
 */

/**
 * The correlation field and its value for an execution's provider submission. `sent` is false
 * when its target takes no seed (`send_seed = false`, frozen at admission): the value is still
 * reported, so evidence always says what it would have been and that it was not sent.
 */
export interface Correlation {
  readonly field: 'seed';
  readonly value: number;
  readonly sent: boolean;
}

export function correlationOf(executionId: string, sent: boolean): Correlation {
  const digest = createHash('sha256').update(`lexec-correlation:v1:${executionId}`).digest();
  return { field: 'seed', value: digest.readUInt32BE(0) & 0x7fff_ffff, sent };
}
