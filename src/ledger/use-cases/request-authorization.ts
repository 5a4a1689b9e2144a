import { randomUUID } from 'node:crypto';
import type { LedgerAuthorization } from '../wire/answers.js';
import { centsCeil, decideRequest, ROLLING_WINDOW_MS, type SpendPolicy } from '../authorization-rules.js';
import { unprocessable, type LedgerError } from '../ledger-error.js';
import { loadAuthorization } from './current-authorization.js';
import { ownerAccountId } from './owner-account.js';
import { refuseIfSuspended } from './suspend-agent.js';
import { checkVelocity, type VelocityContext } from './velocity-breaker.js';

export interface RequestContext extends VelocityContext {
  readonly authorizationTtlMs: number;
  /** The policy of an agent without its own. */
  readonly defaultPolicy: SpendPolicy;
}

export interface AuthorizationInput {
  amount_units: bigint;
  currency: string;
  purpose?: string | undefined;
}

/**
 * An agent asks for a spend authorization; caps are checked and the hold taken atomically. A
 * suspended agent is refused in the same transaction, so a request commits before a suspension
 * (and is cancelled by it) or is refused after it — never held past it. Velocity limits are
 * counted and decided in it too (velocity-breaker.ts); a refusal is thrown once the transaction
 * has committed, so the request's count (and a suspension the breaker made) is kept.
 */
export function requestAuthorization(context: RequestContext, agentId: string, input: AuthorizationInput): LedgerAuthorization {
  const { store, now } = context;
  const outcome = store.immediate((): { refusal: LedgerError } | { authorization: LedgerAuthorization } => {
    refuseIfSuspended(context.suspensions, agentId);
    const at = now();
    const policy = store.policy(agentId) ?? context.defaultPolicy;
    const tooFast = checkVelocity(context, agentId, policy, at);
    if (tooFast !== null) return { refusal: tooFast };
    const committed = store.committedUnits({ agentId, now: at, since: at - ROLLING_WINDOW_MS });
    const decision = decideRequest(policy, input.amount_units, committed);
    if (decision.outcome === 'refused') return { refusal: unprocessable('policy_refused', decision.reason, ['amount_units']) };
    const tokenId = randomUUID();
    store.insertAuthorization({
      tokenId,
      accountId: ownerAccountId(context),
      agentId,
      amountUnits: input.amount_units,
      currency: input.currency,
      amountCents: centsCeil(input.amount_units),
      status: decision.outcome,
      purpose: input.purpose ?? null,
      decidedBy: decision.outcome === 'approved' ? 'policy' : null,
      decidedAt: decision.outcome === 'approved' ? at : null,
      createdAt: at,
      expiresAt: at + context.authorizationTtlMs,
      policyVersion: 'version' in policy ? (policy.version as bigint) : null,
      policy,
    });
    return { authorization: store.authorizationView(loadAuthorization(store, tokenId)) };
  });
  if ('refusal' in outcome) throw outcome.refusal;
  return outcome.authorization;
}
