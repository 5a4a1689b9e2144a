import type { LedgerAuthorization } from '../wire/answers.js';
import { conflict } from '../ledger-error.js';
import type { AuditStore, CredentialActor } from '../store/audit-store.js';
import { commitThenReach, currentAuthorization, loadAuthorization, type CommitContext } from './current-authorization.js';

export interface DecisionContext extends CommitContext {
  readonly audit: AuditStore;
}

/**
 * An approver decides a pending request, in the audit trail in the same transaction. Deciding
 * the same way twice is a no-op (and no second audit event).
 */
export function decideAuthorization(
  context: DecisionContext,
  tokenId: string,
  decision: 'approved' | 'denied',
  actor: CredentialActor,
  reason?: string,
): LedgerAuthorization {
  const { store, now } = context;
  return commitThenReach(context, 'ledger.after_decision_commit', () => {
    const row = currentAuthorization(context, tokenId);
    if (row.status === decision) return store.authorizationView(row);
    if (row.status !== 'requested') throw conflict(`authorization_${row.status}`);
    const at = now();
    store.decide(tokenId, {
      status: decision,
      decidedBy: actor.credential_id,
      reason: reason ?? null,
      decidedAt: at,
      closedAt: decision === 'denied' ? at : null,
    });
    context.audit.record({
      actor,
      action: decision === 'approved' ? 'authorization_approved' : 'authorization_denied',
      agentId: row.agent_id,
      subjectId: tokenId,
      before: { status: row.status },
      after: { status: decision, amount_units: row.amount_units.toString(), currency: row.currency },
      reason: reason ?? null,
      at,
    });
    return store.authorizationView(loadAuthorization(store, tokenId));
  });
}
