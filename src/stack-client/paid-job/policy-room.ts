import { costUnits, pricingSnapshot } from '../../executor/domain/pricing.js';
import type { LedgerClient } from '../../ledger/client/ledger-client.js';
import { LedgerPolicyRefused, type BudgetRefusal } from '../../ledger/client/ledger-client-errors.js';
import type { JobQuote } from './quote.js';

/*
 * Why the agent's spend policy refused a job, with the room it leaves — as data, for each client
 * to word: the cap or budget that refused it and, for the per-authorization cap, the most images
 * of this size that fit under it (0: not even one).
 */

/** Why the policy refused: the cap, or a calendar budget with its figures (docs/ledger.md "Budgets"). */
export interface PolicyRefusal {
  readonly reason: 'per_authorization_cap_exceeded' | 'daily_cap_exceeded' | 'budget_exceeded';
  /** With `budget_exceeded`: the budget that refused it, its period, limit and what remains. */
  readonly budget: BudgetRefusal | null;
}

export interface PolicyRoom extends PolicyRefusal {
  readonly currency: string;
  readonly per_authorization_cap_units: bigint;
  /** Left in the rolling 24 h window now (daily cap minus spent and held). */
  readonly remaining_units: bigint;
  /** The most images of the quoted size whose cost fits under the per-authorization cap. */
  readonly largest_count: number;
}

/** The ledger's refusal of a request under the spend policy (`ledger_policy_refused`), with its reason. */
export function policyRefusalReason(error: unknown): PolicyRefusal | null {
  if (!(error instanceof LedgerPolicyRefused)) return null;
  if (error.reason === 'budget_exceeded') return { reason: error.reason, budget: error.budget };
  return error.reason === 'per_authorization_cap_exceeded' || error.reason === 'daily_cap_exceeded' ? { reason: error.reason, budget: null } : null;
}

/** Reads the agent's policy and standing (agent capability) and measures the room for this job. */
export async function policyRoom(ledger: LedgerClient, quote: JobQuote, refusal: PolicyRefusal): Promise<PolicyRoom> {
  const standing = await ledger.spending();
  const cap = standing.policy.per_authorization_cap_units;
  let largest = 0;
  // The executor's own pricing, as the quote: the cost of n images is not n times one (rounded once).
  for (let count = 1; count <= quote.target.max_image_count; count += 1) {
    if (costUnits(pricingSnapshot(quote.target, quote.imageSize, count), count) > cap) break;
    largest = count;
  }
  return { ...refusal, currency: standing.currency, per_authorization_cap_units: cap, remaining_units: standing.remaining_units, largest_count: largest };
}
