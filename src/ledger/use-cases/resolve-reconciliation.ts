import type { ReconciliationRecordView } from '../store/ledger-rows.js';
import { conflict, notFound } from '../ledger-error.js';
import type { AuditStore, CredentialActor } from '../store/audit-store.js';
import { commitThenReach, type CommitContext, type LedgerContext } from './current-authorization.js';
import { recordResolvedEvent } from './authorization-events.js';
import { releaseWithin } from './release-authorization.js';
import { settleWithin, type Receipt, type SettleContext } from './settle-authorization.js';

/** The records, oldest first: all of them, or those open or resolved. */
export function reconciliationRecords({ store }: LedgerContext, status: 'open' | 'resolved' | undefined): ReconciliationRecordView[] {
  return store.recordIds(status ?? null).map((recordId) => store.recordView(recordId));
}

/** How a human resolves a record: settle its authorization by a receipt, or release it. */
export type RecordResolution = { kind: 'settle'; receipt: Receipt } | { kind: 'release'; reason: string };

/** Resolves a record by settling or releasing its authorization, in the same transaction as its audit event. */
export function resolveReconciliation(
  context: SettleContext & CommitContext & { readonly audit: AuditStore },
  recordId: string,
  actor: CredentialActor,
  resolution: RecordResolution,
): { replayed: boolean; record: ReconciliationRecordView } {
  const { store, now } = context;
  return commitThenReach(context, 'ledger.after_resolve_commit', () => {
    const record = store.record(recordId);
    if (!record) throw notFound();
    const wanted = resolution.kind === 'settle' ? 'settled' : 'released';
    if (record.status === 'resolved') {
      if (record.resolution === wanted) return { replayed: true, record: store.recordView(recordId) };
      throw conflict('record_resolved');
    }
    const note = resolution.kind === 'release' ? resolution.reason : null;
    const at = now();
    // The record is resolved as the human's first, so the settle or release below finds it no
    // longer open and leaves it (and its event) to this resolution.
    store.resolveRecord(recordId, { resolution: wanted, resolvedBy: actor.credential_id, note, at });
    const closed = resolution.kind === 'settle' ? settleWithin(context, record.token_id, record.execution_id, resolution.receipt) : releaseWithin(context, record.token_id, record.execution_id, 'reconciled_no_charge');
    recordResolvedEvent(context.events, closed.row, at, { recordId, resolution: wanted, by: 'operator' });
    const settled = store.authorizationView(closed.row).settlement;
    context.audit.record({
      actor,
      action: 'reconciliation_resolved',
      agentId: closed.row.agent_id,
      subjectId: recordId,
      before: { status: 'open', token_id: record.token_id },
      after: { status: 'resolved', resolution: wanted, authorization_status: closed.row.status, ...(settled === null ? {} : { settled_units: settled.amount_units.toString() }) },
      reason: note,
      at,
    });
    return { replayed: false, record: store.recordView(recordId) };
  });
}
