import { plain } from '../cli/render-ledger.js';
import { UserError } from '../errors.js';
import type { LedgerAuthorization } from '../ledger/wire/answers.js';

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
    throw new UserError('authorization_released', `Authorization ${authorization.token_id} was released (${plain(authorization.release?.reason ?? 'unused')}); nothing was charged on it.`, { nextStep: again });
  }
}
