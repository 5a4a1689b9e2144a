import type { ExecutionTarget } from './config/executor-config-schema.js';
import { hasSecretShapedText } from '../config/schema-parts.js';
import { toFieldIssues } from '../config/zod-issues.js';
import { NO_CRASH_POINTS, type CrashPoints } from '../crash-points.js';
import { fingerprint } from '../domain/canonical-json.js';
import { SECRET_TEXT_REASON } from '../domain/secret-text.js';
import { changedPaths, executionRequestSchema, targetSelector, type ExecutionRequest } from './domain/execution-request.js';
import { executionIdFor, workflowIdFor } from './domain/execution-states.js';
import { costUnits, pricingSnapshot, selectTarget, type Selection } from './domain/pricing.js';
import type { ExecutionScheduler } from './execution-scheduler.js';
import { conflict, internalError, invalidRequest, notReady, unprocessable } from './executor-error.js';
import { LedgerRefused, LedgerUnavailable, type LedgerGateway } from './ledger-gateway.js';
import type { Readiness } from './readiness.js';
import type { ExecutionRow } from './store/execution-reads.js';
import type { ExecutionStore } from './store/execution-store.js';

export const ROUTE_VERSION = 2;

export interface AdmissionDependencies {
  readonly store: ExecutionStore;
  readonly ledger: LedgerGateway;
  readonly scheduler: ExecutionScheduler;
  readonly readiness: Readiness;
  /** The active, operator-approved targets (none when providers are disabled). */
  readonly targets: () => readonly ExecutionTarget[];
  /** sandbox, live or disabled. */
  readonly providerMode: string;
  /** Live mode's spend ceiling in micro-units (null outside live mode). */
  readonly liveSpendCeiling: bigint | null;
  /** Development builds' crash points between the durable steps (src/crash-points.ts). */
  readonly crashPoints?: CrashPoints;
  /**
   * Told when the engine refused to schedule (its store may be on a full disk): the readiness
   * monitor samples at once instead of at its next interval, so later requests are refused with
   * the cause before their authorization is claimed.
   */
  readonly onSchedulingFailed?: () => void;
}

export interface Admitted {
  /** false for a new execution, true for a replay of an existing one. */
  readonly replayed: boolean;
  readonly execution: ExecutionRow;
}

type Selected = Extract<Selection, { ok: true }>;

/**
 * Admission of `POST /v2/executions` (spec §2, §4): a new token is resolved and claimed at the
 * ledger in one conditional claim for the execution id derived from the token (the ledger's
 * answer is authoritative for account and agent; it claims nothing for an authorization in
 * another currency or with a hold below the quoted cost), durably created as a pending execution
 * with its frozen pricing snapshot, then scheduled. An identical body replays locally without asking the ledger; a changed field
 * conflicts. Concurrent requests for one token share one admission (one ledger call).
 */
export type Admission = ReturnType<typeof createAdmission>;

export function createAdmission(deps: AdmissionDependencies) {
  // Per token, the admission under way — or the orphan-claim sweep's look at that token (see
  // `exclusively`): whoever comes next for the token waits for it, then looks again.
  const inFlight = new Map<string, Promise<unknown>>();
  // Live admissions run one at a time: one executor owns the database, so this makes the
  // spend-ceiling check and the insert that commits the spend one atomic step.
  let liveTurn: Promise<unknown> = Promise.resolve();
  const crash = deps.crashPoints ?? NO_CRASH_POINTS;

  async function schedule(execution: ExecutionRow, replayed: boolean): Promise<Admitted> {
    if (execution.state !== 'pending') return { replayed, execution };
    try {
      await deps.scheduler.schedule(execution.execution_id, execution.workflow_id);
    } catch {
      deps.onSchedulingFailed?.();
      // The pending execution is durable; the identical retry schedules it without the ledger.
      throw notReady('scheduling_failed');
    }
    crash.reach('admission.after_workflow_start');
    return { replayed, execution: deps.store.markScheduled(execution.execution_id) };
  }

  async function replay(request: ExecutionRequest, requestFingerprint: string, executionId: string, storedFingerprint: string): Promise<Admitted> {
    const execution = deps.store.execution(executionId);
    if (execution === undefined) throw internalError();
    if (storedFingerprint !== requestFingerprint) {
      throw conflict('immutable_field_changed', changedPaths(JSON.parse(execution.request_json), request));
    }
    if (execution.state === 'pending' && !deps.readiness.isReady()) throw notReady('readiness_withdrawn');
    return schedule(execution, true);
  }

  async function admitNew(request: ExecutionRequest, requestFingerprint: string, selection: Selected): Promise<Admitted> {
    const { target } = selection;
    const tokenId = request.spend_auth_token_id;
    const executionId = executionIdFor(tokenId);
    const snapshot = pricingSnapshot(target, selection.imageSize, request.input.image_count);
    try {
      const quotedUnits = costUnits(snapshot, request.input.image_count);
      if (deps.liveSpendCeiling !== null && deps.store.liveCommittedUnits() + quotedUnits > deps.liveSpendCeiling) {
        throw unprocessable('live_spend_ceiling_reached', { fields: ['input.image_count'] });
      }
      // One round trip resolves and claims: the ledger checks the currency, the hold and the
      // target in the claim's own transaction and answers the authoritative authorization (account, agent).
      crash.reach('admission.before_claim');
      const claimed = await deps.ledger.claim(tokenId, executionId, { currency: snapshot.currency, minHeldUnits: quotedUnits, targetId: target.target_id });
      crash.reach('admission.after_claim');
      // The same execution claiming again (a lost local record) gets the authorization back as it
      // is; only a still-claimed one may be admitted again.
      if (claimed.status !== 'claimed' || claimed.execution_id !== executionId) {
        throw conflict(claimed.execution_id === executionId ? `authorization_${claimed.status}` : 'authorization_claimed_elsewhere', ['spend_auth_token_id']);
      }
      const execution = await deps.store.createPending({
        executionId,
        workflowId: workflowIdFor(executionId),
        spendAuthTokenId: tokenId,
        accountId: claimed.account_id,
        agentId: claimed.agent_id,
        targetId: target.target_id,
        request,
        fingerprint: requestFingerprint,
        routeVersion: ROUTE_VERSION,
        snapshot,
        heldUnits: claimed.held_units,
        currency: claimed.currency,
        quotedUnits,
        providerMode: deps.providerMode,
        sendSeed: target.send_seed,
      });
      crash.reach('admission.after_pending');
      return await schedule(execution, false);
    } catch (error) {
      if (error instanceof LedgerUnavailable) throw notReady('ledger_unavailable');
      if (error instanceof LedgerRefused) {
        if (error.status === 404) throw unprocessable('authorization_not_found', { fields: ['spend_auth_token_id'] });
        if (error.status === 409) throw conflict(error.reasonCode === 'claimed_by_another_execution' || error.reasonCode === 'claimed_by_another_credential' ? 'authorization_claimed_elsewhere' : (error.reasonCode ?? 'authorization_conflict'), ['spend_auth_token_id']);
        if (error.status === 422 && error.code === 'requirement_not_met') {
          if (error.reasonCode === 'currency_mismatch') throw unprocessable('authorization_currency_mismatch', { fields: ['spend_auth_token_id'] });
          if (error.reasonCode === 'hold_below_requirement') {
            throw unprocessable('authorization_insufficient', { reasonCode: 'cost_exceeds_hold', fields: ['spend_auth_token_id', 'input.image_count'] });
          }
        }
        // 401 or another refusal: our ledger credential no longer works — not the caller's fault.
        throw notReady('ledger_refused');
      }
      throw error;
    }
  }

  return {
    async admit(body: unknown): Promise<Admitted> {
      const parsed = executionRequestSchema.safeParse(body ?? undefined, { reportInput: true });
      // The field paths at fault, each once; never the submitted values.
      if (!parsed.success) {
        const reason = hasSecretShapedText(parsed.error.issues) ? SECRET_TEXT_REASON : 'field_invalid';
        throw invalidRequest(reason, [...new Set(toFieldIssues(parsed.error.issues).map((issue) => issue.path))]);
      }
      const request: ExecutionRequest = parsed.data;
      const tokenId = request.spend_auth_token_id;
      const requestFingerprint = fingerprint(request);

      // Wait out an admission of the same token already under way, then look again.
      for (let running = inFlight.get(tokenId); running !== undefined; running = inFlight.get(tokenId)) {
        await running.catch(() => undefined);
      }
      const existing = deps.store.admission(tokenId);
      if (existing) return replay(request, requestFingerprint, existing.execution_id, existing.fingerprint);

      const selector = targetSelector(request);
      if ('fields' in selector) throw invalidRequest(selector.reason, selector.fields);
      const selection = selectTarget(deps.targets(), selector.selector, request.input.image_size);
      if (!selection.ok) throw invalidRequest(selection.reason, selection.fields);
      if (request.input.image_count > selection.target.max_image_count) throw invalidRequest('image_count_out_of_range', ['input.image_count']);
      if (!deps.readiness.isReady()) throw notReady('readiness_withdrawn');

      let admission: Promise<Admitted>;
      if (deps.liveSpendCeiling === null) admission = admitNew(request, requestFingerprint, selection);
      else {
        admission = liveTurn.catch(() => undefined).then(() => admitNew(request, requestFingerprint, selection));
        liveTurn = admission;
      }
      inFlight.set(tokenId, admission);
      try {
        return await admission;
      } finally {
        if (inFlight.get(tokenId) === admission) inFlight.delete(tokenId);
      }
    },

    /**
     * Runs `work` for a token while no admission of it is under way, holding the token meanwhile:
     * an admission of it that arrives waits until `work` is done and then looks at the store
     * again. Answers `ran: false` without running `work` when an admission (or another holder) is
     * under way. The orphan-claim sweep releases a claim only inside this, after checking the
     * store once more, so it never releases a claim an admission is turning into an execution.
     */
    async exclusively<T>(tokenId: string, work: () => Promise<T>): Promise<Exclusive<T>> {
      if (inFlight.has(tokenId)) return { ran: false };
      // Set before `work` starts (in the same synchronous turn as the check above).
      const running = Promise.resolve().then(work);
      inFlight.set(tokenId, running);
      try {
        return { ran: true, value: await running };
      } finally {
        if (inFlight.get(tokenId) === running) inFlight.delete(tokenId);
      }
    },
  };
}

/** What `exclusively` answers: the work's value, or `busy` (an admission of the token is under way; nothing ran). */
export type Exclusive<T> = { readonly ran: true; readonly value: T } | { readonly ran: false };

/** Reason codes for which `executor_admission_rejected` is written (spec §6: an allowlist). */
export const ADMISSION_REJECTION_REASONS = [
  'field_invalid',
  'target_required',
  'target_ambiguous',
  'target_not_selectable',
  'pricing_selector_not_matched',
  'image_count_out_of_range',
  'immutable_field_changed',
  SECRET_TEXT_REASON,
] as const;
