import { randomUUID } from 'node:crypto';
import type { LegacyCentsReceipt, PreciseReceipt } from '../wire/requests.js';
import { canonicalJson, fingerprint } from '../../domain/canonical-json.js';
import { centsCeil, unitsFromCents } from '../authorization-rules.js';
import type { LedgerContractLevel } from '../ledger-config.js';
import { conflict, unprocessable } from '../ledger-error.js';
import type { AuthorizationRow } from '../store/ledger-rows.js';
import { authorizationEvent, recordResolvedEvent } from './authorization-events.js';
import { commitThenReach, currentAuthorization, loadAuthorization, requireClaimedBy, type CommitContext, type LedgerContext } from './current-authorization.js';

/** A receipt after validation: precise, or legacy whole cents converted exactly to micro-units. */
export type Receipt = { readonly shape: 'precise'; readonly body: PreciseReceipt } | { readonly shape: 'legacy_cents'; readonly body: LegacyCentsReceipt };

export interface SettleContext extends LedgerContext {
  /** At `v4.4` a precise receipt is refused: that contract knows only whole cents. */
  readonly contractLevel: LedgerContractLevel;
}

function normaliseReceipt(receipt: Receipt) {
  if (receipt.shape === 'precise') {
    const body = receipt.body;
    return {
      receipt_id: body.receipt_id,
      amount_units: body.amount_units,
      currency: body.currency,
      provider_request_id: body.provider_request_id,
      price_model_snapshot: canonicalJson(body.price_model_snapshot),
    };
  }
  const body = receipt.body;
  return {
    receipt_id: body.receipt_id,
    amount_units: unitsFromCents(body.amount_cents),
    currency: body.currency,
    provider_request_id: null,
    price_model_snapshot: canonicalJson(body.price_model_snapshot),
  };
}

/** Settles inside an open transaction; shared by the executor route and reconciliation. */
export function settleWithin(
  context: SettleContext,
  tokenId: string,
  executionId: string,
  receipt: Receipt,
): { replayed: boolean; row: AuthorizationRow } {
  const { store, now } = context;
  if (receipt.shape === 'precise' && context.contractLevel === 'v4.4') {
    throw unprocessable('precise_receipt_unsupported', 'contract_level_v4.4', ['receipt.amount_units']);
  }
  const normal = normaliseReceipt(receipt);
  const receiptFingerprint = fingerprint({ token_id: tokenId, execution_id: executionId, shape: receipt.shape, receipt: receipt.body });
  const existing = store.settlementByReceipt(normal.receipt_id);
  if (existing) {
    const sameReceipt = existing.token_id === tokenId && existing.receipt_fingerprint === receiptFingerprint;
    if (sameReceipt) return { replayed: true, row: currentAuthorization(context, tokenId) };
    throw conflict('receipt_conflict', ['receipt.receipt_id']);
  }
  const row = currentAuthorization(context, tokenId);
  if (row.status === 'settled') throw conflict('authorization_settled');
  requireClaimedBy(row, executionId);
  if (normal.currency !== row.currency) throw unprocessable('currency_mismatch', undefined, ['receipt.currency']);
  if (normal.amount_units > row.amount_units) {
    throw unprocessable('amount_exceeds_hold', undefined, [receipt.shape === 'precise' ? 'receipt.amount_units' : 'receipt.amount_cents']);
  }
  const at = now();
  store.insertSettlement({
    settlementId: `stl_${randomUUID()}`,
    tokenId,
    receiptId: normal.receipt_id,
    executionId,
    receiptShape: receipt.shape,
    amountUnits: normal.amount_units,
    currency: normal.currency,
    amountCents: centsCeil(normal.amount_units),
    providerRequestId: normal.provider_request_id,
    priceModelSnapshot: normal.price_model_snapshot,
    receiptFingerprint,
    at,
  });
  store.markSettled(tokenId, at);
  authorizationEvent(context.events, 'authorization.settled', row, at, { held_units: row.amount_units.toString() }, normal.amount_units);
  const closed = store.closeOpenRecord(tokenId, 'settled', at);
  if (closed !== undefined) recordResolvedEvent(context.events, row, at, { recordId: closed, resolution: 'settled', by: 'executor' });
  return { replayed: false, row: loadAuthorization(store, tokenId) };
}

/** The executor settles its claimed authorization by a receipt; the same receipt again is a replay. */
export function settleAuthorization(context: SettleContext & CommitContext, tokenId: string, executionId: string, receipt: Receipt) {
  const { store } = context;
  return commitThenReach(context, 'ledger.after_settle_commit', () => {
    const { replayed, row } = settleWithin(context, tokenId, executionId, receipt);
    return { replayed, authorization: store.authorizationView(row) };
  });
}
