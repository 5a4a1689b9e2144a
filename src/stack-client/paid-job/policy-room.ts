import { costUnits, pricingSnapshot } from '../../executor/domain/pricing.js';
import type { LedgerClient } from '../../ledger/client/ledger-client.js';
import { LedgerPolicyRefused } from '../../ledger/client/ledger-client-errors.js';
import type { JobQuote } from './quote.js';

/*
 * Why the agent's spend policy refused a job, with the room it leaves — as data, for each client
 * to word: the cap that refused it and, for the per-authorization cap, the most images of this
 * size that fit under it (0: not even one).
 */

export interface PolicyRoom {
  readonly reason: 'per_authorization_cap_exceeded' | 'daily_cap_exceeded';
  readonly currency: string;
  readonly per_authorization_cap_units: bigint;
  /** Left in the rolling 24 h window now (daily cap minus spent and held). */
  readonly remaining_units: bigint;
  /** The most images of the quoted size whose cost fits under the per-authorization cap. */
  readonly largest_count: number;
}

/** The ledger's refusal of a request under the spend policy (`ledger_policy_refused`), with its reason. */
export function policyRefusalReason(error: unknown): PolicyRoom['reason'] | null {
  if (!(error instanceof LedgerPolicyRefused)) return null;
  return error.reason === 'per_authorization_cap_exceeded' || error.reason === 'daily_cap_exceeded' ? error.reason : null;
}

/** Reads the agent's policy and standing (agent capability) and measures the room for this job. */
export async function policyRoom(ledger: LedgerClient, quote: JobQuote, reason: PolicyRoom['reason']): Promise<PolicyRoom> {
  const standing = await ledger.spending();
  const cap = standing.policy.per_authorization_cap_units;
  let largest = 0;
  // The executor's own pricing, as the quote: the cost of n images is not n times one (rounded once).
  for (let count = 1; count <= quote.target.max_image_count; count += 1) {
    if (costUnits(pricingSnapshot(quote.target, quote.imageSize, count), count) > cap) break;
    largest = count;
  }
  return { reason, currency: standing.currency, per_authorization_cap_units: cap, remaining_units: standing.remaining_units, largest_count: largest };
}
