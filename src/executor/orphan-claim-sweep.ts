import type { Admission } from './admission.js';
import { LedgerRefused, LedgerUnavailable, type LedgerGateway } from './ledger-gateway.js';
import type { TimerPort } from './readiness-monitor.js';
import type { ExecutionStore } from './store/execution-store.js';

/*
 * Orphan claims (docs/executions.md "Orphan claims"): admission claims an authorization at the
 * ledger and only then records the pending execution. A crash between the two — or a claim the
 * ledger committed after admission gave up waiting for its answer — leaves the agent's money held
 * for an execution that does not exist; an agent that retries the identical request turns it into
 * one, an agent that gives up never does. The sweep finds this executor credential's claims older
 * than the bound, keeps those the executor has an execution for, and releases the rest at the
 * ledger as `claim_without_execution`: provably never submitted, since no execution exists.
 *
 * Race safety: the sweep and admission run in one process. Each claim is handled while holding its
 * token's admission slot (`admission.exclusively`): an admission of that token under way makes the
 * sweep skip it, and one that arrives waits until the sweep is done. Inside, the executions table is
 * read again just before the release, and the ledger releases only a claim still held by the
 * execution it names (and claimed by this credential). After the release, an identical admission
 * is answered `409 conflict authorization_released` and creates nothing.
 *
 * "No execution" proves "never submitted" only for claims this database could know of: a claim
 * made before it got its identity (a database recreated, or one upgraded since the claim) is never
 * released by the sweep; each sweep names those still claimed in one warning, for a human.
 */

/** How often a sweep runs: a third of the bound, and at least once a minute. */
export function sweepIntervalMs(releaseAfterSeconds: number): number {
  return Math.min(Math.floor((releaseAfterSeconds * 1000) / 3), 60_000);
}

/** Pages of claims one sweep reads at most (the next sweep carries on). */
const MAX_PAGES = 50;

export interface SweepOutcome {
  /** Claims released as `claim_without_execution`. */
  readonly released: number;
  /** Claims the executor has an execution for (or whose admission was under way). */
  readonly kept: number;
  /** Claims made before this database got its identity: never released here, a human decides. */
  readonly predating: number;
  /** The sweep stopped early: the ledger could not be asked or refused the listing. */
  readonly failed: boolean;
}

export interface OrphanClaimSweepOptions {
  readonly ledger: Pick<LedgerGateway, 'claims' | 'release'>;
  readonly store: Pick<ExecutionStore, 'admission' | 'execution'>;
  readonly admission: Pick<Admission, 'exclusively'>;
  /** A claim at least this old with no execution is released (`orphan_claims.release_after_seconds`). */
  readonly releaseAfterSeconds: number;
  /** When this database got its identity (installation-store.ts createdAt): older claims are not judged. */
  readonly knownSince: number;
  readonly timers: TimerPort;
  /** Structured events (token and execution ids, never amounts or secrets). */
  readonly log: { info(entry: Record<string, unknown>): void; warn(entry: Record<string, unknown>): void };
}

export interface OrphanClaimSweep {
  /** One sweep now; a sweep already under way is joined, never overlapped. */
  sweep(): Promise<SweepOutcome>;
  /** A sweep now, then one every interval (each timed from the end of the last). */
  start(): void;
  /** No further sweep; resolves once one under way has finished the claim it is at. */
  stop(): Promise<void>;
}

export function createOrphanClaimSweep(options: OrphanClaimSweepOptions): OrphanClaimSweep {
  const { ledger, store, admission, timers, log } = options;
  const intervalMs = sweepIntervalMs(options.releaseAfterSeconds);
  let running: Promise<SweepOutcome> | null = null;
  let timer: unknown = null;
  let state: 'idle' | 'started' | 'stopped' = 'idle';

  /** Releases one claim if, holding its token, the executor still has no execution for it. */
  async function releaseIfOrphan(tokenId: string, executionId: string): Promise<boolean> {
    const outcome = await admission.exclusively(tokenId, async () => {
      if (store.admission(tokenId) !== undefined || store.execution(executionId) !== undefined) return false;
      try {
        await ledger.release(tokenId, executionId, 'claim_without_execution');
      } catch (error) {
        if (!(error instanceof LedgerRefused)) throw error;
        // E.g. settled, or claimed again since it was listed: the ledger's checks win; nothing changed.
        log.warn({ event: 'orphan_claim_not_released', token_id: tokenId, execution_id: executionId, status: error.status, reason_code: error.reasonCode ?? error.code });
        return false;
      }
      log.info({ event: 'orphan_claim_released', token_id: tokenId, execution_id: executionId, reason: 'claim_without_execution' });
      return true;
    });
    return outcome.ran && outcome.value;
  }

  async function sweepOnce(): Promise<SweepOutcome> {
    let released = 0;
    let kept = 0;
    const predating: string[] = [];
    const outcome = (failed: boolean): SweepOutcome => {
      if (predating.length > 0) {
        log.warn({ event: 'orphan_claims_predate_database', claims: predating.length, token_ids: predating.slice(0, 10), known_since: new Date(options.knownSince).toISOString() });
      }
      return { released, kept, predating: predating.length, failed };
    };
    try {
      let after: string | null = null;
      for (let page = 0; page < MAX_PAGES; page += 1) {
        const listed = await ledger.claims({ olderThanSeconds: options.releaseAfterSeconds, after });
        for (const claim of listed.claims) {
          // Shutting down: the claims left wait for the next start.
          if (state === 'stopped') return outcome(false);
          if (Date.parse(claim.claimed_at) < options.knownSince) predating.push(claim.token_id);
          else if (await releaseIfOrphan(claim.token_id, claim.execution_id)) released += 1;
          else kept += 1;
        }
        if (listed.next === null || state === 'stopped') break;
        after = listed.next;
      }
      return outcome(false);
    } catch (error) {
      // The ledger away (or refusing the listing) ends this sweep only; the next one tries again.
      const reason = error instanceof LedgerUnavailable ? 'ledger_unavailable' : error instanceof LedgerRefused ? 'ledger_refused' : 'unexpected';
      log.warn({ event: 'orphan_claim_sweep_failed', reason, released });
      return outcome(true);
    }
  }

  function sweep(): Promise<SweepOutcome> {
    running ??= sweepOnce().finally(() => {
      running = null;
    });
    return running;
  }

  function schedule(): void {
    if (state !== 'started') return;
    timer = timers.setTimeout(() => {
      timer = null;
      void sweep().then(schedule);
    }, intervalMs);
  }

  return {
    sweep,
    start() {
      if (state !== 'idle') return;
      state = 'started';
      void sweep().then(schedule);
    },
    async stop() {
      state = 'stopped';
      if (timer !== null) timers.clearTimeout(timer);
      timer = null;
      await running;
    },
  };
}
