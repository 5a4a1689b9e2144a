import { randomUUID } from 'node:crypto';
import type { LedgerAuthorization } from '../wire/answers.js';
import { centsCeil, decideRequest, ROLLING_WINDOW_MS, type SpendPolicy } from '../authorization-rules.js';
import { unprocessable } from '../ledger-error.js';
import { loadAuthorization, type LedgerContext } from './current-authorization.js';
import { ownerAccountId } from './owner-account.js';
import type { SuspensionStore } from '../store/suspension-store.js';
import { refuseIfSuspended } from './suspend-agent.js';

export interface RequestContext extends LedgerContext {
  readonly authorizationTtlMs: number;
  /** The policy of an agent without its own. */
  readonly defaultPolicy: SpendPolicy;
  /** The agents' status: a suspended agent's request is refused. */
  readonly suspensions: SuspensionStore;
}

export interface AuthorizationInput {
  amount_units: bigint;
  currency: string;
  purpose?: string | undefined;
}

/**
 * An agent asks for a spend authorization; caps are checked and the hold taken atomically. A
 * suspended agent is refused in the same transaction, so a request commits before a suspension
 * (and is cancelled by it) or is refused after it — never held past it.
 */
export function requestAuthorization(context: RequestContext, agentId: string, input: AuthorizationInput): LedgerAuthorization {
  const { store, now } = context;
  return store.immediate(() => {
    refuseIfSuspended(context.suspensions, agentId);
    const at = now();
    const committed = store.committedUnits({ agentId, now: at, since: at - ROLLING_WINDOW_MS });
    const policy = store.policy(agentId) ?? context.defaultPolicy;
    const decision = decideRequest(policy, input.amount_units, committed);
    if (decision.outcome === 'refused') throw unprocessable('policy_refused', decision.reason, ['amount_units']);
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
    return store.authorizationView(loadAuthorization(store, tokenId));
  });
}
