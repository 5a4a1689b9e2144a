import type { LedgerAuthorization } from '../wire/answers.js';
import { conflict } from '../ledger-error.js';
import { currentAuthorization, loadAuthorization, type LedgerContext } from './current-authorization.js';

/** An approver decides a pending request. Deciding the same way twice is a no-op. */
export function decideAuthorization(
  context: LedgerContext,
  tokenId: string,
  decision: 'approved' | 'denied',
  credentialId: string,
  reason?: string,
): LedgerAuthorization {
  const { store, now } = context;
  return store.immediate(() => {
    const row = currentAuthorization(context, tokenId);
    if (row.status === decision) return store.authorizationView(row);
    if (row.status !== 'requested') throw conflict(`authorization_${row.status}`);
    store.decide(tokenId, {
      status: decision,
      decidedBy: credentialId,
      reason: reason ?? null,
      decidedAt: now(),
      closedAt: decision === 'denied' ? now() : null,
    });
    return store.authorizationView(loadAuthorization(store, tokenId));
  });
}
