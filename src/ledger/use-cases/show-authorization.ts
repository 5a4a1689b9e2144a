import type { LedgerAuthorization, LedgerResolution } from '../wire/answers.js';
import { effectiveStatus } from '../authorization-rules.js';
import { resolutionView } from '../store/ledger-rows.js';
import { currentAuthorization, loadAuthorization, type LedgerContext } from './current-authorization.js';

/** One authorization as agents, approvers and the admin see it. */
export function showAuthorization(context: LedgerContext, tokenId: string): LedgerAuthorization {
  const { store } = context;
  return store.immediate(() => store.authorizationView(currentAuthorization(context, tokenId)));
}

/** How often at most the ledger records that an agent asked after one authorization (ms). */
export const CLIENT_SEEN_EVERY_MS = 5_000;

/**
 * Records that the agent asked after its own authorization (a client still waits on it; the
 * console says so on the approval card): at most once every CLIENT_SEEN_EVERY_MS per
 * authorization, and best effort — a database busy past its timeout never fails the read
 * (as a credential's last use, credential-lifecycle.ts).
 */
export function noteClientSeen(context: LedgerContext, authorization: LedgerAuthorization): void {
  const at = context.now();
  const last = authorization.client_waiting === null ? null : Date.parse(authorization.client_waiting.last_seen_at);
  if (last !== null && at - last < CLIENT_SEEN_EVERY_MS) return;
  try {
    context.store.clientSeen(authorization.token_id, at);
  } catch {
    // The agent's next read records it.
  }
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
