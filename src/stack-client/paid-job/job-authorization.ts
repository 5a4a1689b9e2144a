import { UserError } from '../../errors.js';
import type { LedgerClient } from '../../ledger/client/ledger-client.js';
import type { LedgerAuthorization } from '../../ledger/wire/answers.js';
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

export interface AuthorizationChoice {
  /** Continue with this authorization instead of requesting one. */
  readonly existingId: string | undefined;
  /** Which client asks (`lexec run`, `lexec agent`): the purpose the ledger records says so. */
  readonly client: string;
  /** The client's words for an existing authorization holding less than the quote. */
  readonly insufficient: (existing: LedgerAuthorization) => UserError;
  /** The client's words when the existing authorization is not this agent's (ledger_not_found); else thrown as it is. */
  readonly unknown?: () => UserError;
  /** The client's words when the spend policy refuses a new request (with the refusing cap); else the ledger's refusal as it is. */
  readonly refused?: (reason: PolicyRoom['reason']) => Promise<UserError>;
}

export async function obtainAuthorization(ledger: LedgerClient, quote: JobQuote, choice: AuthorizationChoice): Promise<LedgerAuthorization> {
  if (choice.existingId === undefined) {
    const label = quote.target.label ?? quote.target.target_id;
    const purpose = `${choice.client}: ${quote.imageCount} x ${quote.imageSize} image${quote.imageCount === 1 ? '' : 's'}, ${label}`.slice(0, 200);
    try {
      return await ledger.requestAuthorization({ amountUnits: quote.amountUnits, purpose });
    } catch (error) {
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
  return existing;
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
