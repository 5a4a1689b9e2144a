import type { LedgerAuthorization } from '../wire/answers.js';
import { LedgerError } from '../ledger-error.js';
import type { AuthorizationRow } from '../store/ledger-rows.js';
import type { AuditStore, CredentialActor } from '../store/audit-store.js';
import { authorizationEvent } from './authorization-events.js';
import { commitThenReach, currentAuthorization, loadAuthorization, type CommitContext } from './current-authorization.js';

export interface DecisionContext extends CommitContext {
  readonly audit: AuditStore;
}

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
 * An approver decides a pending request, in the audit trail in the same transaction. The same
 * approver deciding the same way again is a no-op (a retry after a lost answer; no second audit
 * event); anyone else finds it decided (`authorization_<status>`, with who and when).
 */
export function decideAuthorization(
  context: DecisionContext,
  tokenId: string,
  decision: 'approved' | 'denied',
  approver: CredentialActor & { readonly holder_name: string | null },
  reason?: string,
): LedgerAuthorization {
  const { store, now } = context;
  return commitThenReach(context, 'ledger.after_decision_commit', () => {
    const row = currentAuthorization(context, tokenId);
    if (row.status === decision && row.decided_by === approver.credential_id) return store.authorizationView(row);
    if (row.status !== 'requested') throw alreadyDecided(row);
    const at = now();
    store.decide(tokenId, {
      status: decision,
      decidedBy: approver.credential_id,
      decidedByName: approver.holder_name,
      reason: reason ?? null,
      decidedAt: at,
      closedAt: decision === 'denied' ? at : null,
    });
    context.audit.record({
      actor: { credential_id: approver.credential_id, kind: approver.kind },
      action: decision === 'approved' ? 'authorization_approved' : 'authorization_denied',
      agentId: row.agent_id,
      subjectId: tokenId,
      before: { status: row.status },
      after: { status: decision, amount_units: row.amount_units.toString(), currency: row.currency },
      reason: reason ?? null,
      at,
    });
    // Who decided, by kind and whether a named approver: never the free-text reason or the name.
    authorizationEvent(context.events, decision === 'approved' ? 'authorization.approved' : 'authorization.denied', row, at, {
      decided_by: approver.kind,
      named_approver: approver.holder_name !== null,
    });
    return store.authorizationView(loadAuthorization(store, tokenId));
  });
}
