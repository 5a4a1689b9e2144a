import { byExecution, type Facts } from './facts.ts';
import type { Fail } from './report.ts';
import { checkDelivered } from './rules-artifacts.ts';
import { frozenPrice, groupBy, priceOf, units } from './values.ts';

/*
 * Every execution's end: terminal or in reconciliation with its ledger record; a succeeded one
 * settled once, for the frozen price × the images delivered, with those images kept; whatever
 * reached the provider has its money at the ledger; a failed one released its hold.
 */

export function checkLifecycle(facts: Facts, fail: Fail): void {
  const { executions, settlements, releases, records, artifacts, attemptsOf, receiptOf, settlementsOfToken, releasesOfToken, submitted, latestAttempt, billedImages } = facts;
  const artifactsOf = groupBy(artifacts, (row) => row.execution_id);
  for (const execution of executions) {
    const id = execution.execution_id;
    const settledHere = settlements.filter((row) => row.execution_id === id);
    const attempt = latestAttempt(id);
    if (!['succeeded', 'failed', 'reconciliation'].includes(execution.state)) fail('terminal_or_reconciliation', id, `state ${execution.state}`);
    if (execution.state === 'reconciliation' && !records.some(byExecution(execution))) {
      fail('reconciliation_has_ledger_record', id, 'no reconciliation record at the ledger');
    }
    if (execution.state === 'succeeded') {
      if (settledHere.length !== 1) fail('succeeded_has_one_settlement', id, `${settledHere.length} settlements by this execution`);
      const receipt = receiptOf.get(id);
      const price = frozenPrice(execution.pricing_snapshot);
      const images = billedImages(id);
      for (const row of settledHere) {
        const amount = units(row.amount_units);
        // A legacy receipt kept only an estimated price, not a unit price: held to the hold alone.
        if (amount === null || row.receipt_shape === 'legacy_cents' || receipt?.receipt_shape === 'legacy_migrated') continue;
        if (price === null) fail('settled_equals_price_times_delivered', id, 'its frozen pricing snapshot has no unit price to price the settlement by');
        else if (images === null) fail('settled_equals_price_times_delivered', id, 'settled, but no delivered or billed image count is recorded');
        else if (images < 1n || images > price.imageCount) fail('settled_equals_price_times_delivered', id, `${images} images billed of ${price.imageCount} asked`);
        else if (amount !== priceOf(price, images)) fail('settled_equals_price_times_delivered', id, `settled ${amount}, price × ${images} images is ${priceOf(price, images)}`);
      }
      checkDelivered(execution, attempt, artifactsOf.get(id) ?? [], fail);
    }
    // Whatever reached (or may have reached) the provider has its money at the ledger: settled,
    // parked for reconciliation, or released by a human's reconciliation — never a plain
    // release, which says the submission never left.
    const reached = (attempt !== undefined && attempt.state !== 'not_transmitted') || (attemptsOf.get(id) ?? []).some((row) => row.request_id !== null && submitted.has(row.request_id));
    if (reached) {
      const token = execution.token_id;
      const released = releasesOfToken.get(token) ?? [];
      const recorded = settlementsOfToken.has(token) || records.some((row) => row.token_id === token) || released.some((row) => row.reason === 'reconciled_no_charge');
      if (!recorded) {
        fail(
          'submitted_has_money_record',
          id,
          released.length > 0
            ? `released as ${released.map((row) => row.reason).join(', ')} without reconciliation although its submission reached the provider`
            : 'its submission reached the provider but the ledger holds no settlement, release or reconciliation record',
        );
      }
    }
    // A failed execution charged nothing: its hold is released, by it.
    if (execution.state === 'failed' && !releases.some(byExecution(execution))) fail('failed_has_release', id, 'failed, but its authorization was not released by it');
  }
}
