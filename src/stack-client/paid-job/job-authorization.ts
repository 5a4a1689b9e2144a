import { UserError } from '../../errors.js';
import type { LedgerClient } from '../../ledger/client/ledger-client.js';
import { LedgerAgentSuspended, LedgerVelocityExceeded } from '../../ledger/client/ledger-client-errors.js';
import type { LedgerAuthorization } from '../../ledger/wire/answers.js';
import { intentKey } from './intent-key.js';
import { policyRefusalReason, type PolicyRoom } from './policy-room.js';
import type { JobQuote } from './quote.js';

/*
 * The authorization that pays for a paid job: a new one for the quoted cost, or an existing one
 * the client continues with (after an approval, an interruption, a timeout) — never one that holds
 * less than the job costs. Then, for a client that waits, the wait for a human's decision.
 */

/** The command a human runs to approve; `profile` null in manual mode (no --profile to name). */
export function approveCommand(tokenId: string, profile: string | null): string {
  return `lexec ledger authorizations approve ${tokenId}${profile === null ? '' : ` --profile ${profile}`}`;
}

export function denyCommand(tokenId: string, profile: string): string {
  return `lexec ledger authorizations deny ${tokenId} --profile ${profile}`;
}

/** The command an operator runs to let a suspended agent spend again; `profile` null in manual mode. */
export function resumeCommand(agentId: string, profile: string | null): string {
  return `lexec ledger agents resume --agent-id ${agentId}${profile === null ? '' : ` --profile ${profile}`}`;
}

export interface AuthorizationChoice {
  /** Continue with this authorization instead of requesting one. */
  readonly existingId: string | undefined;
  /** Which client asks (`lexec run`, `lexec agent`): the purpose the ledger records says so. */
  readonly client: string;
  /** The job's prompt: with the quote and the purpose, the intent its request's idempotency key is derived from (intent-key.ts). */
  readonly prompt: string;
  /** The client's words for an existing authorization holding less than the quote. */
  readonly insufficient: (existing: LedgerAuthorization) => UserError;
  /** The client's words when the existing authorization is not this agent's (ledger_not_found); else thrown as it is. */
  readonly unknown?: () => UserError;
  /** The client's words when the spend policy refuses a new request (with the refusing cap); else the ledger's refusal as it is. */
  readonly refused?: (reason: PolicyRoom['reason']) => Promise<UserError>;
  /**
   * The client's words when the agent is suspended (`agentId`: null if the ledger did not say
   * whose; `by`: an operator, or the policy's runaway-loop breaker); else the ledger's refusal as it is.
   */
  readonly suspended?: (agentId: string | null, by: 'operator' | 'velocity_breaker') => UserError;
  /** The client's words when the request is over the policy's velocity limit (wait `retryAfterSeconds`, never loop); else the ledger's refusal as it is. */
  readonly tooFast?: (retryAfterSeconds: number, limit: string | null) => UserError;
}

/** The calling agent's own id, as the ledger knows it (its reads stay open while suspended); null when it cannot be read. */
async function ownAgentId(ledger: LedgerClient): Promise<string | null> {
  try {
    return (await ledger.spending()).agent_id;
  } catch {
    return null;
  }
}

/** The authorization a job goes on with; `continued`: the ledger answered the open request an identical earlier run of this job opened. */
export interface ObtainedAuthorization {
  readonly authorization: LedgerAuthorization;
  readonly continued: boolean;
}

/**
 * The job's authorization: the existing one named, or a request for the quoted cost under the
 * idempotency key of the job's intent — so running the same job again while its request is still
 * open (awaiting approval, or approved and unused) continues that request instead of opening a
 * second hold.
 */
export async function obtainAuthorization(ledger: LedgerClient, quote: JobQuote, choice: AuthorizationChoice): Promise<ObtainedAuthorization> {
  if (choice.existingId === undefined) {
    const label = quote.target.label ?? quote.target.target_id;
    const purpose = `${choice.client}: ${quote.imageCount} x ${quote.imageSize} image${quote.imageCount === 1 ? '' : 's'}, ${label}`.slice(0, 200);
    try {
      const requested = await ledger.requestAuthorization({
        amountUnits: quote.amountUnits,
        purpose,
        idempotencyKey: intentKey(quote, purpose, choice.prompt),
        targetId: quote.target.target_id,
        prompt: choice.prompt,
      });
      return { authorization: requested.authorization, continued: requested.replayed };
    } catch (error) {
      // Nothing was requested: a suspended agent's request is refused before anything is held.
      if (error instanceof LedgerAgentSuspended && choice.suspended !== undefined) throw choice.suspended(await ownAgentId(ledger), error.suspendedBy);
      // Nothing was requested either; the request is not retried here: every one counts against the limit.
      if (error instanceof LedgerVelocityExceeded && choice.tooFast !== undefined) throw choice.tooFast(error.retryAfterSeconds, error.limit);
      const reason = policyRefusalReason(error);
      if (reason === null || choice.refused === undefined) throw error;
      throw await choice.refused(reason);
    }
  }
  let existing: LedgerAuthorization;
  try {
    existing = await ledger.showAuthorization(choice.existingId);
  } catch (error) {
    if (choice.unknown !== undefined && error instanceof UserError && error.code === 'ledger_not_found') throw choice.unknown();
    throw error;
  }
  if ((existing.status === 'approved' || existing.status === 'requested') && existing.amount_units < quote.amountUnits) throw choice.insufficient(existing);
  return { authorization: existing, continued: false };
}

/** How the executor refuses a job whose authorization another job's execution holds (after admitJob read it again). */
const TAKEN = new Set(['executor_conflict', 'authorization_released']);

/**
 * Whether the executor refused the job because another job took the authorization it continued:
 * between the ledger's answer and this job's admission, an execution of another request claimed it
 * (one given its id with `--authorization` or `authorization_id`, or another executor's). This
 * job's own admission never conflicts with itself — an identical request is a replay, which is also
 * how two identical jobs at once share one execution — so a conflict on an authorization an
 * execution holds is another job's. The key is free again then (the authorization is claimed), so
 * the caller requests once more and goes on with the new authorization.
 */
export async function takenByAnotherJob(error: unknown, obtained: ObtainedAuthorization, reread: () => Promise<LedgerAuthorization>): Promise<boolean> {
  if (!obtained.continued || !(error instanceof UserError) || !TAKEN.has(error.code)) return false;
  const latest = await reread().catch(() => null);
  return latest !== null && latest.execution_id !== null;
}

/** Reads the authorization again until a human decided it (or it expired); `pause` may throw (a deadline, an interrupt). */
export async function waitForDecision(ledger: LedgerClient, authorization: LedgerAuthorization, pause: (ms: number) => Promise<void>, pollMs: number): Promise<LedgerAuthorization> {
  let latest = authorization;
  while (latest.status === 'requested') {
    await pause(pollMs);
    latest = await ledger.showAuthorization(latest.token_id);
  }
  return latest;
}
