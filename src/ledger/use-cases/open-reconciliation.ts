import { randomUUID } from 'node:crypto';
import { canonicalJson } from '../../domain/canonical-json.js';
import type { ReconciliationRecordView } from '../store/ledger-rows.js';
import { authorizationEvent } from './authorization-events.js';
import { commitThenReach, currentAuthorization, requireClaimedBy, type CommitContext } from './current-authorization.js';

/** The executor parks a claimed authorization whose billing is ambiguous; the hold stays. */
export function openReconciliation(
  context: CommitContext,
  tokenId: string,
  executionId: string,
  reason: string,
  evidence: Record<string, unknown>,
): { replayed: boolean; record: ReconciliationRecordView } {
  const { store, now } = context;
  return commitThenReach(context, 'ledger.after_reconciliation_commit', () => {
    const row = currentAuthorization(context, tokenId);
    requireClaimedBy(row, executionId);
    const open = store.openRecordId(tokenId);
    const recordId = open ?? `rec_${randomUUID()}`;
    if (open === undefined) {
      const at = now();
      store.insertRecord({ recordId, tokenId, executionId, reason, evidence: canonicalJson(evidence), at });
      // The reason only (a closed list): the evidence is the executor's and stays in the record.
      authorizationEvent(context.events, 'reconciliation.opened', row, at, { record_id: recordId, reason });
    }
    return { replayed: open !== undefined, record: store.recordView(recordId) };
  });
}
