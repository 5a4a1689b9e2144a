import { sendsSeed, submitWindow } from './execution-runner.js';
import { z } from 'zod';
import { canonicalJson } from '../domain/canonical-json.js';
import { redactSecretShapes } from '../domain/secret-text.js';
import { freeText } from '../config/schema-parts.js';
import { priceModelSnapshotSchema } from '../domain/price-model-snapshot.js';
import { executionDetail } from './execution-view.js';
import { conflict, internalError, invalidRequest, notFound, notReady } from './executor-error.js';
import { costUnits, imagesPricedBy } from './domain/pricing.js';
import { LedgerRefused, LedgerUnavailable, type LedgerGateway } from './ledger-gateway.js';
import type { ExecutionStore } from './store/execution-store.js';
import { correlationOf } from './domain/correlation.js';
import { NO_CRASH_POINTS, type CrashPoints } from '../crash-points.js';

/** Why a human resolved as they did: kept with the resolution, never a secret. */
const resolutionNote = freeText(z.string({ error: 'must be a string' }).min(1, 'must not be empty').max(500, 'must be at most 500 characters'));

/** A human's decision on an execution under reconciliation. */
export const resolutionBody = z.discriminatedUnion(
  'resolution',
  [
    z.strictObject({
      resolution: z.literal('settle'),
      /** Images the provider's evidence says were charged; not needed when a receipt is already kept. */
      images_billed: z.number({ error: 'must be a whole number' }).int('must be a whole number').min(1, 'must be at least 1').max(16).optional(),
      note: resolutionNote,
    }),
    z.strictObject({
      resolution: z.literal('release'),
      note: resolutionNote,
    }),
  ],
  { error: 'must be {"resolution":"settle",…} or {"resolution":"release",…}' },
);
export type ResolutionBody = z.output<typeof resolutionBody>;

/**
 * The executor's reconciliation route (issue 5 item 6; docs/executions.md): lists executions
 * under reconciliation with their evidence, and resolves one — settling with a precise receipt
 * (the kept one, or one for the images the provider's evidence shows), or releasing when the
 * provider proves there was no charge. Every resolution is recorded with its note.
 */
export function createReconciliation({ store, ledger, crashPoints }: { store: ExecutionStore; ledger: LedgerGateway; crashPoints?: CrashPoints }) {
  const crash = crashPoints ?? NO_CRASH_POINTS;
  function ledgerTrouble(error: unknown): never {
    if (error instanceof LedgerUnavailable) throw notReady('ledger_unavailable');
    if (error instanceof LedgerRefused) throw conflict(`ledger_${error.code}`);
    throw error;
  }

  return {
    list() {
      return store.underReconciliation().map((row) => ({
        ...executionDetail(store, row.execution_id, row),
        evidence: store.providerAttempts(row.execution_id).map((attempt) => ({
          attempt_id: attempt.attempt_id,
          provider_request_id: attempt.request_id,
          state: attempt.state,
          outcome_code: attempt.outcome_code,
          delivered_images: attempt.delivered_images,
          submit_window: submitWindow(attempt),
          correlation: correlationOf(attempt.execution_id, sendsSeed(row)),
        })),
      }));
    },

    async resolve(executionId: string, body: ResolutionBody) {
      const execution = store.execution(executionId);
      if (execution === undefined) throw notFound();
      const recorded = store.resolution(executionId);
      const wanted = body.resolution === 'settle' ? 'settled' : 'released';
      if (recorded !== undefined) {
        if (recorded.resolution === wanted) return { replayed: true, resolution: resolutionView(recorded), execution: executionDetail(store, executionId) };
        throw conflict('already_resolved');
      }
      if (execution.state !== 'reconciliation') throw conflict('not_under_reconciliation');

      if (body.resolution === 'release') {
        await ledger.release(execution.spend_auth_token_id, executionId, 'reconciled_no_charge').catch(ledgerTrouble);
        crash.reach('resolution.after_release_answer');
        store.recordResolution(executionId, { kind: 'released', imagesBilled: null, amountUnits: null, note: body.note });
      } else {
        const snapshot = priceModelSnapshotSchema.parse(JSON.parse(execution.pricing_snapshot));
        let kept = store.receipt(executionId);
        // The images the settlement bills: the operator's count, or — when a receipt was already
        // kept (a refused precise receipt) — the count that receipt prices, which a different
        // count must not contradict (the recorded resolution has to say what the money says).
        let imagesBilled = body.images_billed ?? null;
        if (kept !== undefined) {
          if (imagesBilled === null) imagesBilled = imagesPricedBy(snapshot, kept.amount_units, Number(store.latestAttempt(executionId)?.delivered_images ?? 0));
          // Any count the receipt's amount prices is consistent (several can round to one amount).
          else if (kept.amount_units === null || costUnits(snapshot, imagesBilled) !== kept.amount_units) throw invalidRequest('images_billed_differs_from_kept_receipt', ['images_billed']);
        }
        if (kept === undefined) {
          if (body.images_billed === undefined) throw invalidRequest('images_billed_required', ['images_billed']);
          if (body.images_billed > snapshot.image_count) throw invalidRequest('more_than_asked', ['images_billed']);
          const attempt = store.latestAttempt(executionId);
          store.insertPreciseReceipt({
            receipt_id: `rcpt_${executionId.slice('exe_'.length)}`,
            execution_id: executionId,
            amount_units: costUnits(snapshot, body.images_billed),
            currency: snapshot.currency,
            provider_request_id: attempt?.request_id ?? `rcpt_${executionId.slice('exe_'.length)}`,
            price_model_snapshot: canonicalJson(snapshot),
          }, attempt?.attempt_id ?? null);
          kept = store.receipt(executionId);
          crash.reach('resolution.after_receipt');
        }
        if (kept?.amount_units == null) throw internalError();
        const { settlementId } = await ledger
          .settle(execution.spend_auth_token_id, executionId, {
            receipt_id: kept.receipt_id,
            amount_units: kept.amount_units.toString(),
            units_scale: 6,
            currency: kept.currency,
            provider_request_id: kept.provider_request_id,
            price_model_snapshot: JSON.parse(kept.price_model_snapshot ?? '{}') as unknown,
          })
          .catch(ledgerTrouble);
        crash.reach('resolution.after_settle_answer');
        store.markReceiptSettled(kept.receipt_id, settlementId);
        crash.reach('resolution.after_settlement_record');
        store.recordResolution(executionId, { kind: 'settled', imagesBilled, amountUnits: kept.amount_units, note: body.note });
      }
      crash.reach('resolution.after_record');
      return { replayed: false, resolution: resolutionView(store.resolution(executionId)), execution: executionDetail(store, executionId) };
    },
  };
}

/** A recorded resolution as answered: the amount a digit string, the count an integer, the time ISO 8601. */
function resolutionView(row: ReturnType<ExecutionStore['resolution']>) {
  if (row === undefined) return null;
  return {
    resolution: row.resolution,
    images_billed: row.images_billed === null ? null : Number(row.images_billed),
    amount_units: row.amount_units,
    note: redactSecretShapes(row.note),
    resolved_at: new Date(Number(row.resolved_at)).toISOString(),
  };
}
