import type { LedgerAuthorization, LedgerResolution } from '../wire/answers.js';
import { effectiveStatus } from '../authorization-rules.js';
import { resolutionView } from '../store/ledger-rows.js';
import { currentAuthorization, loadAuthorization, type LedgerContext } from './current-authorization.js';

/** One authorization as agents, approvers and the admin see it. */
export function showAuthorization(context: LedgerContext, tokenId: string): LedgerAuthorization {
  const { store } = context;
  return store.immediate(() => store.authorizationView(currentAuthorization(context, tokenId)));
}

/**
 * One authorization as the executor sees it. A read needs no write lock unless the clock has
 * expired the authorization, which `currentAuthorization` then persists: one SELECT is already a
 * consistent snapshot of the row.
 */
export function resolveAuthorization(context: LedgerContext, tokenId: string): LedgerResolution {
  const { store, now } = context;
  const row = loadAuthorization(store, tokenId);
  if (effectiveStatus(row.status, Number(row.expires_at), now()) === row.status) return resolutionView(row);
  return store.immediate(() => resolutionView(currentAuthorization(context, tokenId)));
}
