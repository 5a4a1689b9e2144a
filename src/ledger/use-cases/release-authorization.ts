import { randomUUID } from 'node:crypto';
import type { LedgerAuthorization } from '../wire/answers.js';
import { conflict } from '../ledger-error.js';
import type { AuthorizationRow } from '../store/ledger-rows.js';
import { authorizationEvent, recordResolvedEvent } from './authorization-events.js';
import { commitThenReach, currentAuthorization, loadAuthorization, requireClaimedBy, type CommitContext, type LedgerContext } from './current-authorization.js';

/** Releases inside an open transaction; shared by the executor route and reconciliation. */
export function releaseWithin(
  context: LedgerContext,
  tokenId: string,
  executionId: string,
  reason: string,
  credentialId: string | null = null,
): { replayed: boolean; row: AuthorizationRow } {
  const { store, now } = context;
  const row = currentAuthorization(context, tokenId);
  if (row.status === 'released') return { replayed: true, row };
  if (row.status === 'settled') throw conflict('authorization_settled');
  requireClaimedBy(row, executionId);
  // An orphan claim is released only by the executor that claimed it (with the credential it
  // claimed with, or a later one of that credential's line, after a rotation): only that executor
  // can know it never created the execution. An unattributed claim is left to a human.
  if (reason === 'claim_without_execution' && (row.claimed_by === null || credentialId === null || !store.sameCredentialLine(row.claimed_by, credentialId))) {
    throw conflict('claimed_by_another_credential');
  }
  const at = now();
  store.insertRelease({ releaseId: `rel_${randomUUID()}`, tokenId, executionId, reason, at });
  store.markReleased(tokenId, at);
  authorizationEvent(context.events, 'authorization.released', row, at, { reason });
  const closed = store.closeOpenRecord(tokenId, 'released', at);
  if (closed !== undefined) recordResolvedEvent(context.events, row, at, { recordId: closed, resolution: 'released', by: 'executor' });
  return { replayed: false, row: loadAuthorization(store, tokenId) };
}

/** `credentialId`: the releasing executor credential (a `claim_without_execution` release must be the claimant). */
export function releaseAuthorization(
  context: CommitContext,
  tokenId: string,
  executionId: string,
  reason: string,
  credentialId: string,
): { replayed: boolean; authorization: LedgerAuthorization } {
  const { store } = context;
  return commitThenReach(context, 'ledger.after_release_commit', () => {
    const { replayed, row } = releaseWithin(context, tokenId, executionId, reason, credentialId);
    return { replayed, authorization: store.authorizationView(row) };
  });
}
