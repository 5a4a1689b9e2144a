import type { LedgerResolution } from '../wire/answers.js';
import type { ClaimRequirement } from '../wire/requests.js';
import { conflict, unprocessable } from '../ledger-error.js';
import { resolutionView } from '../store/ledger-rows.js';
import { commitThenReach, currentAuthorization, loadAuthorization, type CommitContext } from './current-authorization.js';

/**
 * Claims an approved authorization for one execution; the same execution may repeat it. With
 * a requirement, an authorization that does not meet it (another currency, a smaller hold) is
 * refused with 422 and nothing is claimed. An authorization that names a target is claimed only
 * by a claim that requires that target (`target_mismatch` otherwise). The claiming credential is recorded with the claim
 * (a repeat keeps the first): an executor lists its own claims by it (executor-claims.ts).
 */
export function claimAuthorization(
  context: CommitContext,
  tokenId: string,
  executionId: string,
  requirement: ClaimRequirement | undefined,
  credentialId: string,
): { replayed: boolean; authorization: LedgerResolution } {
  const { store, now } = context;
  return commitThenReach(context, 'ledger.after_claim_commit', () => {
    const row = currentAuthorization(context, tokenId);
    if (row.execution_id !== null && row.execution_id !== executionId) throw conflict('claimed_by_another_execution');
    if (row.execution_id === null && row.status !== 'approved') throw conflict(`authorization_${row.status}`);
    if (requirement !== undefined) {
      if (row.currency !== requirement.currency) throw unprocessable('requirement_not_met', 'currency_mismatch', ['require.currency']);
      if (row.amount_units < requirement.min_held_units) throw unprocessable('requirement_not_met', 'hold_below_requirement', ['require.min_held_units']);
    }
    // An authorization that names its target pays for that target only: budgets and the
    // allow-list were decided for it, so an execution of another target cannot spend it.
    if (row.target_id !== null && requirement?.target_id !== row.target_id) throw unprocessable('requirement_not_met', 'target_mismatch', ['require.target_id']);
    if (row.execution_id === executionId) {
      // Execution ids come from the token: another executor on this ledger given the same
      // token would name the same execution. Only its claimant may repeat a claim, or two
      // executors would each submit it (docs/ledger.md).
      if (row.claimed_by !== null && row.claimed_by !== credentialId) throw conflict('claimed_by_another_credential');
      return { replayed: true, authorization: resolutionView(row) };
    }
    store.claim(tokenId, executionId, now(), credentialId);
    return { replayed: false, authorization: resolutionView(loadAuthorization(store, tokenId)) };
  });
}
