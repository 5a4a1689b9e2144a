import { randomUUID } from 'node:crypto';
import { fingerprint } from '../../domain/canonical-json.js';
import { UNITS_SCALE } from '../../domain/money.js';
import type { LedgerAuthorization } from '../wire/answers.js';
import { centsCeil, decideRequest, ROLLING_WINDOW_MS, type SpendPolicy } from '../authorization-rules.js';
import { budgetRefusalDetails, decideTarget } from '../budget-rules.js';
import { conflict, LedgerError, unprocessable } from '../ledger-error.js';
import type { AuthorizationRow } from '../store/ledger-rows.js';
import { currentAuthorization, loadAuthorization, type LedgerContext } from './current-authorization.js';
import { ownerAccountId } from './owner-account.js';
import { suspendedRefusal } from './suspend-agent.js';
import { decideRequestBudgets, recordCrossings, type BudgetContext } from './budget-standing.js';
import { checkVelocity, type VelocityContext } from './velocity-breaker.js';
import type { RefusalStore } from '../store/refusal-store.js';

export interface RequestContext extends VelocityContext, BudgetContext {
  /** Runs of identical refusals: one `authorization.refused` a minute per agent and reason. */
  readonly refusals: RefusalStore;
  readonly authorizationTtlMs: number;
  /** The policy of an agent without its own. */
  readonly defaultPolicy: SpendPolicy;
}

export interface AuthorizationInput {
  amount_units: bigint;
  currency: string;
  purpose?: string | undefined;
  /** The executor target and the prompt it pays for (docs/ledger.md "Spend requests"). */
  target_id?: string | undefined;
  prompt?: string | undefined;
}

/** The authorization a request opened, or — `replayed` — the open one its idempotency key names. */
export interface RequestedAuthorization {
  readonly authorization: LedgerAuthorization;
  readonly replayed: boolean;
}

/** The SHA-256 fingerprint of a request as parsed: what a repeat under the same key must match. */
function requestFingerprint(input: AuthorizationInput): string {
  // The target and the prompt count only when given: a request that names neither keeps the
  // fingerprint it had before a request could name them (ledger migration 10), so its repeat replays.
  return fingerprint({
    amount_units: input.amount_units,
    units_scale: UNITS_SCALE,
    currency: input.currency,
    purpose: input.purpose ?? null,
    ...(input.target_id === undefined ? {} : { target_id: input.target_id }),
    ...(input.prompt === undefined ? {} : { prompt: input.prompt }),
  });
}

/**
 * The agent's authorization the key opened, while it is still open: requested, or approved and
 * unclaimed. One past its expiry is persisted as expired first (expiry is otherwise lazy), so a
 * repeat never answers it as usable and the key is free for a new one.
 */
function openUnderKey(context: LedgerContext, agentId: string, key: string): AuthorizationRow | null {
  const stored = context.store.openByIdempotencyKey(agentId, key);
  if (stored === undefined) return null;
  const row = currentAuthorization(context, stored.token_id);
  return row.status === 'requested' || row.status === 'approved' ? row : null;
}

/** The policy limit a refusal names (`authorization.refused`'s `limit`). */
const POLICY_LIMIT = { per_authorization_cap_exceeded: 'per_authorization_cap_units', daily_cap_exceeded: 'daily_cap_units' } as const;

/**
 * How long after an agent's last `authorization.refused` for a reason the same refusal is only
 * counted, not written again (docs/ledger.md "Events"): a runaway agent refused a thousand times
 * a minute writes one event a minute, and its webhook sinks get one delivery, not a thousand.
 */
export const REFUSAL_EVENT_INTERVAL_MS = 60_000;

/**
 * A refused request, recorded in its transaction (which commits): `authorization.refused` with
 * the refusal's reason code as answered and the limit it names, if one; the amount asked, no
 * authorization (none was opened). The same agent refused for the same reason within
 * REFUSAL_EVENT_INTERVAL_MS of the last such event is counted in its run (`refusal_runs`)
 * instead, and the next event written says how many were (`repeated`).
 */
function recordRefusal(context: RequestContext, agentId: string, input: AuthorizationInput, refusal: LedgerError, limit?: string): { refusal: LedgerError } {
  const reason = refusal.reasonCode ?? refusal.code;
  const at = context.now();
  const run = context.refusals.run(agentId, reason);
  if (run !== undefined && at - run.lastEventAt < REFUSAL_EVENT_INTERVAL_MS) {
    context.refusals.repeated(agentId, reason);
    return { refusal };
  }
  const named = limit ?? refusal.details?.velocity_limit;
  const details: Record<string, string | number> = { reason };
  if (named !== undefined) details.limit = named;
  if (run !== undefined && run.repeated > 0) details.repeated = run.repeated;
  context.events.append({
    type: 'authorization.refused',
    at,
    agentId,
    targetId: input.target_id ?? null,
    amountUnits: input.amount_units,
    details,
  });
  context.refusals.written(agentId, reason, at);
  return { refusal };
}

/**
 * An agent asks for a spend authorization; caps are checked and the hold taken atomically. A
 * suspended agent is refused in the same transaction, so a request commits before a suspension
 * (and is cancelled by it) or is refused after it — never held past it. Velocity limits are
 * counted and decided in it too (velocity-breaker.ts); a refusal — suspended, too fast, over a cap
 * — is thrown once the transaction has committed, so the request's count, a suspension the
 * breaker made and the refusal's event (`authorization.refused`) are kept.
 *
 * With an idempotency key (docs/ledger.md "Idempotent requests"), a repeat while the
 * authorization the key opened is still open answers that one (`replayed`) — or, with another
 * body, is refused `idempotency_key_reused` — before the velocity limits: it opens nothing, so it
 * is neither counted nor refused by them. Suspension is checked first and wins.
 */
export function requestAuthorization(context: RequestContext, agentId: string, input: AuthorizationInput, idempotencyKey: string | null = null): RequestedAuthorization {
  const { store, now } = context;
  const idempotency = idempotencyKey === null ? null : { key: idempotencyKey, fingerprint: requestFingerprint(input) };
  const outcome = store.immediate((): { refusal: LedgerError } | RequestedAuthorization => {
    const suspended = suspendedRefusal(context.suspensions, agentId);
    if (suspended !== null) return recordRefusal(context, agentId, input, suspended);
    if (idempotency !== null) {
      const open = openUnderKey(context, agentId, idempotency.key);
      if (open !== null && open.request_fingerprint !== idempotency.fingerprint) throw conflict('idempotency_key_reused', ['idempotency-key']);
      if (open !== null) return { authorization: store.authorizationView(open), replayed: true };
    }
    const at = now();
    const policy = store.policy(agentId) ?? context.defaultPolicy;
    const tooFast = checkVelocity(context, agentId, policy, at);
    if (tooFast !== null) return recordRefusal(context, agentId, input, tooFast);
    const targetId = input.target_id ?? null;
    const target = decideTarget(policy, targetId);
    if (target.outcome === 'refused') return recordRefusal(context, agentId, input, unprocessable('policy_refused', target.reason, ['target_id']));
    const committed = store.committedUnits({ agentId, now: at, since: at - ROLLING_WINDOW_MS });
    const decision = decideRequest(policy, input.amount_units, committed);
    if (decision.outcome === 'refused') return recordRefusal(context, agentId, input, unprocessable('policy_refused', decision.reason, ['amount_units']), POLICY_LIMIT[decision.reason]);
    // Calendar budgets, the target's cap and the installation's, in this same transaction (budget-standing.ts).
    const budgets = decideRequestBudgets(context, agentId, policy, targetId, input.amount_units, at);
    if (budgets.outcome === 'refused') {
      const refusal = new LedgerError('unprocessable', 'policy_refused', { reasonCode: 'budget_exceeded', fields: ['amount_units'], details: budgetRefusalDetails(budgets.standing, input.amount_units) });
      return recordRefusal(context, agentId, input, refusal, budgets.standing.name);
    }
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
      idempotency,
      targetId: input.target_id ?? null,
      prompt: input.prompt ?? null,
    });
    const event = { at, agentId, targetId: input.target_id ?? null, tokenId, amountUnits: input.amount_units };
    context.events.append({ ...event, type: 'authorization.requested', details: { status: decision.outcome } });
    if (decision.outcome === 'requested') context.events.append({ ...event, type: 'approval.waiting', details: { expires_at: new Date(at + context.authorizationTtlMs).toISOString() } });
    recordCrossings(context, agentId, budgets.crossings, at, tokenId);
    return { authorization: store.authorizationView(loadAuthorization(store, tokenId)), replayed: false };
  });
  if ('refusal' in outcome) throw outcome.refusal;
  return outcome;
}
