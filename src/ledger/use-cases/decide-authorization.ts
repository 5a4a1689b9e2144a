import type { LedgerAuthorization } from '../wire/answers.js';
import { LedgerError } from '../ledger-error.js';
import type { AuthorizationRow } from '../store/ledger-rows.js';
import type { Principal } from '../credential-lifecycle.js';
import { currentAuthorization, loadAuthorization, type LedgerContext } from './current-authorization.js';

/**
 * The request was decided already — by someone else, or the other way: the refusal says by whom
 * (the approver's name, or its credential id when it has none, or `policy`) and when, so a
 * person who lost a race to another approver reads "already approved by Ada at 12:01".
 */
function alreadyDecided(row: AuthorizationRow): LedgerError {
  const details: Record<string, string> = {};
  if (row.decided_by !== null) details.decided_by = row.decided_by;
  if (row.decided_by_name !== null) details.decided_by_name = row.decided_by_name;
  if (row.decided_at !== null) details.decided_at = new Date(Number(row.decided_at)).toISOString();
  return new LedgerError('conflict', 'conflict', { reasonCode: `authorization_${row.status}`, details });
}

/**
 * An approver decides a pending request. The same approver deciding the same way again is a no-op
 * (a retry after a lost answer); anyone else finds it decided (`authorization_<status>`, with who
 * and when).
 */
export function decideAuthorization(
  context: LedgerContext,
  tokenId: string,
  decision: 'approved' | 'denied',
  approver: Pick<Principal, 'credential_id' | 'holder_name'>,
  reason?: string,
): LedgerAuthorization {
  const { store, now } = context;
  return store.immediate(() => {
    const row = currentAuthorization(context, tokenId);
    if (row.status === decision && row.decided_by === approver.credential_id) return store.authorizationView(row);
    if (row.status !== 'requested') throw alreadyDecided(row);
    store.decide(tokenId, {
      status: decision,
      decidedBy: approver.credential_id,
      decidedByName: approver.holder_name,
      reason: reason ?? null,
      decidedAt: now(),
      closedAt: decision === 'denied' ? now() : null,
    });
    return store.authorizationView(loadAuthorization(store, tokenId));
  });
}
