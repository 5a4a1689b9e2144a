import { plain } from '../../terminal/plain-text.js';
import { UserError } from '../../errors.js';
import type { LedgerAuthorization } from '../../ledger/wire/answers.js';

/** How a caller words the next step after an operator suspended the agent (`agentId`) and cancelled its authorization. */
export type WhenSuspended = (agentId: string) => string;

/** The default: the operator resumes the agent, then the caller asks anew. */
const resumeThenAgain = (again: string): WhenSuspended => (agentId) =>
  `An operator must resume agent ${agentId} first (\`lexec ledger agents resume --agent-id ${agentId}\`); then ${again.charAt(0).toLowerCase()}${again.slice(1)}`;

/**
 * An authorization the executor will not run on ends the job here, with the reason — for
 * `lexec run` and the agent's `generate_images` alike; `again` says how that caller asks anew,
 * `suspended` how it words a cancellation by an operator's suspension of the agent.
 */
export function refuseUnusable(authorization: LedgerAuthorization, again: string, suspended: WhenSuspended = resumeThenAgain(again)): void {
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
  if (authorization.status === 'cancelled') {
    // The ledger cancels an authorization nobody claimed when an operator suspends its agent.
    const why = authorization.cancellation?.reason === 'agent_suspended' ? `an operator suspended agent ${authorization.agent_id}` : `it was cancelled (${plain(authorization.cancellation?.reason ?? 'unknown')})`;
    throw new UserError('authorization_cancelled', `Authorization ${authorization.token_id} was cancelled before any execution used it: ${why}; nothing was spent on it and nothing is held.`, {
      nextStep: suspended(authorization.agent_id),
    });
  }
}

/**
 * The executor refused an admission as a conflict: the authorization may have become unusable
 * since the caller read it (it expired, the executor released it as an orphan claim while the
 * caller was retrying, or an operator suspended the agent and so cancelled it). Reads it again and ends the job with that reason; returns (and the caller
 * reports the conflict as it is) when it still looks usable or cannot be read.
 */
export async function refuseIfUnusableAfterConflict(error: unknown, reread: () => Promise<LedgerAuthorization>, again: string, suspended?: WhenSuspended): Promise<void> {
  if (!(error instanceof UserError) || error.code !== 'executor_conflict') return;
  let latest: LedgerAuthorization;
  try {
    latest = await reread();
  } catch {
    return;
  }
  refuseUnusable(latest, again, suspended);
}
