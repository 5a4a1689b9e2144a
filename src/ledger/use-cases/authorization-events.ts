import type { LedgerEventDetails, LedgerEventType } from '../events/ledger-event-types.js';
import type { EventStore } from '../store/event-store.js';
import type { AuthorizationRow } from '../store/ledger-rows.js';

/*
 * The events of an authorization's changes (docs/ledger.md "Events"), appended by the use case
 * that makes the change, inside its transaction (store/event-store.ts). Each names the
 * authorization's agent, target and id; the amount is the hold unless the event says otherwise
 * (a settlement: the amount settled).
 */

/** Appends `type` for the authorization `row` at `at`. */
export function authorizationEvent(
  events: EventStore,
  type: LedgerEventType,
  row: Pick<AuthorizationRow, 'agent_id' | 'target_id' | 'token_id' | 'amount_units'>,
  at: number,
  details: LedgerEventDetails = {},
  amountUnits: bigint = row.amount_units,
): void {
  events.append({ type, at, agentId: row.agent_id, targetId: row.target_id, tokenId: row.token_id, amountUnits, details });
}

/** An expiry persisted now: what it was when its time ran out (waiting for a human, or approved and never claimed). */
export function expiryEvent(events: EventStore, row: AuthorizationRow, at: number): void {
  authorizationEvent(events, 'authorization.expired', row, at, { status_before: row.status, expires_at: new Date(Number(row.expires_at)).toISOString() });
}

/** A reconciliation record resolved: by the executor's own settle or release, or by a human (`operator`). */
export function recordResolvedEvent(events: EventStore, row: AuthorizationRow, at: number, record: { recordId: string; resolution: 'settled' | 'released'; by: 'executor' | 'operator' }): void {
  authorizationEvent(events, 'reconciliation.resolved', row, at, { record_id: record.recordId, resolution: record.resolution, resolved_by: record.by });
}
