import { plain } from '../../terminal/plain-text.js';
import { UserError } from '../../errors.js';
import type { LedgerAuthorization } from '../../ledger/wire/answers.js';

/**
 * An authorization the executor will not run on ends the job here, with the reason — for
 * `lexec run` and the agent's `generate_images` alike; `again` says how that caller asks anew.
 */
export function refuseUnusable(authorization: LedgerAuthorization, again: string): void {
  const reason = authorization.decision_reason === null ? '' : ` (reason: ${plain(authorization.decision_reason)})`;
  if (authorization.status === 'denied') {
    throw new UserError('authorization_denied', `Authorization ${authorization.token_id} was denied${reason}; nothing was spent.`, { nextStep: again });
  }
  if (authorization.status === 'expired') {
    throw new UserError('authorization_expired', `Authorization ${authorization.token_id} expired before it was used; nothing was spent.`, { nextStep: again });
  }
  if (authorization.status === 'released') {
    // An orphan claim: claimed, but the executor never created the execution, so it gave the hold back.
    const why =
      authorization.release?.reason === 'claim_without_execution'
        ? 'its hold was released because the executor claimed it but never created an execution for it (claim_without_execution), so it can pay for nothing now'
        : `it was released (${plain(authorization.release?.reason ?? 'unused')})`;
    throw new UserError('authorization_released', `Authorization ${authorization.token_id}: ${why}; nothing was charged on it.`, { nextStep: again });
  }
}

/**
 * The executor refused an admission as a conflict: the authorization may have become unusable
 * since the caller read it (it expired, or the executor released it as an orphan claim while the
 * caller was retrying). Reads it again and ends the job with that reason; returns (and the caller
 * reports the conflict as it is) when it still looks usable or cannot be read.
 */
export async function refuseIfUnusableAfterConflict(error: unknown, reread: () => Promise<LedgerAuthorization>, again: string): Promise<void> {
  if (!(error instanceof UserError) || error.code !== 'executor_conflict') return;
  let latest: LedgerAuthorization;
  try {
    latest = await reread();
  } catch {
    return;
  }
  refuseUnusable(latest, again);
}
