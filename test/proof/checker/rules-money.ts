import { byExecution, type Facts } from './facts.ts';
import type { Fail } from './report.ts';
import { frozenPrice, microUnits, priceOf, units } from './values.ts';

/*
 * Money: the executor holds what the ledger holds; a settlement stays within the hold, is the
 * receipt the executor kept and names it back; every receipt is its exact amount and the frozen
 * price × the images billed; a human's resolution is what the ledger closed.
 */

export function checkMoney(facts: Facts, fail: Fail): void {
  const { executions, authorizationOf, settlements, executionById, receiptOf, receipts, latestAttempt, billedImages, resolutions, records, releases, resolutionOf } = facts;

  for (const execution of executions) {
    const id = execution.execution_id;
    const authorization = authorizationOf.get(execution.token_id);
    if (authorization === undefined) {
      fail('closed_by_claiming_execution', id, `runs on authorization ${execution.token_id}, which the ledger does not have`);
      continue;
    }
    // The ledger's claim names this execution; the executor holds what the ledger holds.
    if (authorization.execution_id !== id) fail('closed_by_claiming_execution', id, `the ledger's claim of ${execution.token_id} names ${authorization.execution_id ?? 'no execution'}`);
    const hold = units(authorization.amount_units);
    const held = units(execution.held_units);
    if (held !== null && hold !== null && held !== hold) fail('hold_matches_ledger', id, `the executor records a hold of ${held} units, the ledger ${hold}`);
    if (execution.currency !== authorization.currency) fail('hold_matches_ledger', id, `the executor records ${execution.currency}, the ledger holds ${authorization.currency}`);
    const quotedUnits = units(execution.quoted_units);
    if (quotedUnits !== null && hold !== null && quotedUnits > hold) fail('hold_matches_ledger', id, `quoted ${quotedUnits} units over the hold of ${hold}`);
  }

  for (const row of settlements) {
    const amount = units(row.amount_units);
    const authorization = authorizationOf.get(row.token_id);
    const hold = units(authorization?.amount_units ?? null);
    if (amount !== null && (hold === null || amount > hold)) fail('settled_within_hold', row.token_id, `settled ${amount} over the hold ${String(hold ?? 'missing')}`);
    if (authorization !== undefined && authorization.currency !== row.currency) fail('hold_matches_ledger', row.token_id, `settled in ${row.currency}, held in ${authorization.currency}`);

    // What the executor settled is what it kept: its receipt, with the settlement's id on it. (A
    // human may also settle a record at the ledger itself; the executor then still has the
    // execution in reconciliation, and that settlement is held to the hold alone.)
    const execution = executionById.get(row.execution_id);
    if (execution === undefined) {
      fail('settlement_matches_receipt', row.token_id, `settles execution ${row.execution_id}, which the executor does not have`);
      continue;
    }
    if (execution.token_id !== row.token_id) fail('settlement_matches_receipt', row.token_id, `execution ${row.execution_id} runs on authorization ${execution.token_id}`);
    if (execution.state !== 'succeeded') continue;
    const receipt = receiptOf.get(execution.execution_id);
    if (receipt === undefined) {
      fail('settlement_matches_receipt', execution.execution_id, 'settled without a receipt kept by the executor');
      continue;
    }
    if (receipt.receipt_id !== row.receipt_id) fail('settlement_matches_receipt', execution.execution_id, `settled receipt ${row.receipt_id}, the executor kept ${receipt.receipt_id}`);
    const kept = units(receipt.amount_units);
    if (amount !== null && kept !== null && kept !== amount) fail('settlement_matches_receipt', execution.execution_id, `settled ${amount} units, the kept receipt says ${kept}`);
    if (receipt.ledger_settlement_id !== row.settlement_id) {
      fail('settlement_matches_receipt', execution.execution_id, `the receipt records settlement ${receipt.ledger_settlement_id ?? 'none'}, the ledger ${row.settlement_id}`);
    }
  }
  const settlementIds = new Set(settlements.map((row) => row.settlement_id));
  for (const receipt of receipts) {
    if (receipt.ledger_settlement_id !== null && !settlementIds.has(receipt.ledger_settlement_id)) {
      fail('settlement_matches_receipt', receipt.execution_id, `the receipt records settlement ${receipt.ledger_settlement_id}, which the ledger does not have`);
    }
  }

  // Every kept receipt: its exact amount at its scale is its micro-units; a precise one is the
  // frozen price × the images billed; the attempt it bills records the same amount. (A receipt
  // migrated from v4.3 whole cents, scale 2, kept an estimated price only: it is not priced.)
  for (const receipt of receipts) {
    const id = receipt.execution_id;
    const execution = executionById.get(id);
    const amount = units(receipt.amount_units);
    if (amount === null) continue;
    const exact = microUnits(receipt.exact_amount, receipt.scale);
    if (exact !== amount) fail('receipt_equals_price_times_billed', id, `exact amount ${String(receipt.exact_amount)} at scale ${String(receipt.scale)} is not its ${amount} micro-units`);
    if (execution !== undefined && execution.currency !== receipt.currency) fail('receipt_equals_price_times_billed', id, `receipt in ${receipt.currency}, the execution in ${execution.currency}`);
    if (receipt.receipt_shape !== 'legacy_migrated' && execution !== undefined) {
      const price = frozenPrice(execution.pricing_snapshot);
      const images = billedImages(id);
      if (price === null) fail('receipt_equals_price_times_billed', id, 'its frozen pricing snapshot has no unit price to price the receipt by');
      else if (images === null) fail('receipt_equals_price_times_billed', id, 'no delivered or billed image count is recorded');
      else if (amount !== priceOf(price, images)) fail('receipt_equals_price_times_billed', id, `receipt of ${amount} units, price × ${images} images is ${priceOf(price, images)}`);
    }
    const attempt = latestAttempt(id);
    if (attempt !== undefined) {
      const billed = microUnits(attempt.exact_amount, attempt.scale);
      if (billed === null && receipt.receipt_shape === 'precise') fail('attempt_amount_matches_receipt', id, `the attempt it bills records no amount, the receipt ${amount}`);
      else if (billed !== null && billed !== amount) fail('attempt_amount_matches_receipt', id, `the attempt records ${billed} units, the receipt ${amount}`);
    }
  }

  // A human's resolution: recorded with the execution's end, and the ledger closed the same way.
  for (const resolution of resolutions) {
    const id = resolution.execution_id;
    const execution = executionById.get(id);
    if (execution === undefined) {
      fail('resolution_matches_ledger', id, 'resolves an execution the executor does not have');
      continue;
    }
    // (A human may resolve before the executor could park the execution at the ledger: no record then.)
    const record = records.find(byExecution(execution));
    if (record !== undefined && (record.status !== 'resolved' || record.resolution !== resolution.resolution)) {
      fail('resolution_matches_ledger', id, `resolved ${resolution.resolution}; the ledger record is ${`${record.status} ${record.resolution ?? ''}`.trim()}`);
    }
    if (resolution.resolution === 'settled') {
      if (execution.state !== 'succeeded' || execution.state_reason !== 'reconciled_settled') fail('resolution_matches_ledger', id, `settled by a human, but ${execution.state} (${execution.state_reason ?? 'no reason'})`);
      const settlement = settlements.find(byExecution(execution));
      const amount = units(resolution.amount_units);
      if (settlement === undefined) fail('resolution_matches_ledger', id, 'settled by a human, but the ledger has no settlement by it');
      else if (amount === null || units(settlement.amount_units) !== amount) fail('resolution_matches_ledger', id, `the resolution records ${String(resolution.amount_units)} units, the settlement ${String(settlement.amount_units)}`);
      const asked = units(resolution.images_billed);
      const billed = billedImages(id);
      if (asked !== null && billed !== asked) fail('resolution_matches_ledger', id, `the human billed ${asked} images, the receipt bills ${String(billed)}`);
    } else {
      if (execution.state !== 'failed' || execution.state_reason !== 'reconciled_no_charge') fail('resolution_matches_ledger', id, `released by a human, but ${execution.state} (${execution.state_reason ?? 'no reason'})`);
      if (!releases.some((row) => byExecution(execution)(row) && row.reason === 'reconciled_no_charge')) fail('resolution_matches_ledger', id, 'released by a human, but the ledger has no reconciled_no_charge release by it');
      if (resolution.images_billed !== null || resolution.amount_units !== null) fail('resolution_matches_ledger', id, 'released by a human, yet images or an amount are recorded as billed');
    }
  }
  for (const execution of executions) {
    if ((execution.state_reason === 'reconciled_settled' || execution.state_reason === 'reconciled_no_charge') && !resolutionOf.has(execution.execution_id)) {
      fail('resolution_matches_ledger', execution.execution_id, `${execution.state_reason}, but no human resolution is recorded`);
    }
  }
}
