import { randomUUID } from 'node:crypto';
import type Database from 'better-sqlite3';
import type { ExecutionPhase } from '../domain/execution-states.js';
import type { ExecutionScheduler } from '../execution-scheduler.js';
import { withoutOwnFsync } from '../../storage/open-database.js';

import { ExecutionNotOwned, type ActivityOutcome, type RunActivity } from './workflow-engine.js';

export type { ActivityOutcome, RunActivity } from './workflow-engine.js';

export interface EmbeddedEngineOptions {
  readonly db: Database.Database;
  /**
   * Called inside the commit that creates a run (and when scheduling an existing one again):
   * lets the executor record `pending → scheduled` in the same commit.
   */
  readonly onScheduled?: (executionId: string) => void;
  readonly runActivity: RunActivity;
  readonly now?: () => number;
  /** The worker's timers (default: the process's); tests pass a fake clock's. */
  readonly timers?: EngineTimers;
  /**
   * The longest the worker sleeps while nothing is due (default 5 s): a heartbeat that keeps its
   * poller proof fresh and bounds what a wake that never came (another process's run) can cost.
   */
  readonly idleWakeMs?: number;
  /** How long a leased run is owned before another worker may take it. */
  readonly leaseMs?: number;
  /** Runs executed at once. */
  readonly concurrency?: number;
  /** Reports an activity that threw (a bug or an unexpected failure); the run is retried. */
  readonly onActivityError?: (executionId: string, phase: ExecutionPhase, error: unknown) => void;
}

/** Timers as the engine uses them (the same shape as the readiness monitor's TimerPort). */
export interface EngineTimers {
  setTimeout(callback: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

const processTimers: EngineTimers = {
  setTimeout: (callback, ms) => setTimeout(callback, ms),
  clearTimeout: (handle) => {
    clearTimeout(handle as NodeJS.Timeout);
  },
};

/** After a look that could not lease a due run (a race for it), the soonest the worker looks again. */
const MIN_WAKE_MS = 10;

export interface EmbeddedEngine extends ExecutionScheduler {
  /** Starts the worker: first takes over runs left by a previous process, then runs what is due. */
  start(): void;
  /** Stops taking new runs and waits up to `boundMs` for those in flight. */
  drain(boundMs: number): Promise<{ drained: boolean; inFlight: number }>;
  /** The positive poller proof for readiness: a worker that polled within two intervals. */
  pollers(): number;
}

/** Retry delay after an activity error: 1 s doubling to 60 s. */
export function backoffMs(attempt: number): number {
  return Math.min(60_000, 1_000 * 2 ** Math.max(0, attempt - 1));
}

/**
 * The `embedded` workflow engine (ARCHITECTURE.md): a durable phase runner inside the executor,
 * on its own SQLite. One run per stable workflow id (scheduling again is a no-op), leases so a
 * run has one owner, retry with backoff, and recovery of runs a previous process left behind.
 *
 * Event-driven: scheduling a run, or a run finishing a phase, wakes the worker at once; otherwise
 * one timer is armed, for the next run that falls due (a "later" poll, a retry, another worker's
 * lease running out), never longer than `idleWakeMs`.
 */
export function createEmbeddedEngine(options: EmbeddedEngineOptions): EmbeddedEngine {
  const { db } = options;
  const now = options.now ?? Date.now;
  const timers = options.timers ?? processTimers;
  const idleWakeMs = options.idleWakeMs ?? 5_000;
  const leaseMs = options.leaseMs ?? 60_000;
  const concurrency = options.concurrency ?? 4;
  const owner = `worker_${randomUUID()}`;
  const inFlight = new Set<Promise<void>>();
  let timer: unknown;
  let running = false;
  let lastPollAt = 0;

  const statements = {
    schedule: db.prepare(
      `INSERT INTO workflow_runs (workflow_id, execution_id, phase, status, available_at, created_at, updated_at)
       VALUES (?, ?, 'submit_provider', 'queued', ?, ?, ?) ON CONFLICT (workflow_id) DO NOTHING`,
    ),
    takeOver: db.prepare("UPDATE workflow_runs SET status = 'queued', available_at = ?, lease_owner = NULL, updated_at = ? WHERE status = 'running' AND lease_owner <> ?"),
    // Two index-ordered reads instead of one OR (which would sort every due run each poll).
    dueQueued: db.prepare("SELECT workflow_id FROM workflow_runs WHERE status = 'queued' AND available_at <= ? ORDER BY available_at LIMIT ?"),
    expiredLeases: db.prepare("SELECT workflow_id FROM workflow_runs WHERE status = 'running' AND lease_expires_at <= ? LIMIT ?"),
    lease: db.prepare(
      `UPDATE workflow_runs SET status = 'running', lease_owner = @owner, lease_expires_at = @expires, attempt = attempt + 1, updated_at = @now
       WHERE workflow_id = @workflow_id AND ((status = 'queued' AND available_at <= @now) OR (status = 'running' AND lease_expires_at <= @now))
       RETURNING workflow_id, execution_id, phase, attempt`,
    ),
    advance: db.prepare(
      // The next phase keeps the run's place in line (its creation time): executions already under
      // way finish before a backlog of new ones starts.
      "UPDATE workflow_runs SET phase = ?, status = 'queued', available_at = MIN(created_at, ?), attempt = 0, last_error_code = NULL, lease_owner = NULL, updated_at = ? WHERE workflow_id = ? AND lease_owner = ?",
    ),
    complete: db.prepare("UPDATE workflow_runs SET status = 'completed', lease_owner = NULL, updated_at = ? WHERE workflow_id = ? AND lease_owner = ?"),
    // When the next run falls due: the earliest queued one, or the earliest lease to run out.
    nextDue: db.prepare(
      `SELECT MIN(at) AS at FROM (
         SELECT MIN(available_at) AS at FROM workflow_runs WHERE status = 'queued'
         UNION ALL SELECT MIN(lease_expires_at) FROM workflow_runs WHERE status = 'running')`,
    ),
    later: db.prepare(
      "UPDATE workflow_runs SET status = 'queued', available_at = ?, last_error_code = ?, lease_owner = NULL, updated_at = ? WHERE workflow_id = ? AND lease_owner = ?",
    ),
  };

  type LeasedRun = { workflow_id: string; execution_id: string; phase: ExecutionPhase; attempt: bigint };

  const createRun = db.transaction((workflowId: string, executionId: string, at: number) => {
    statements.schedule.run(workflowId, executionId, at, at, at);
    options.onScheduled?.(executionId);
  });

  /** Leases up to `limit` due runs in one transaction (one commit per poll). */
  const leaseDue = db.transaction((at: number, limit: number): LeasedRun[] => {
    const candidates = [
      ...(statements.dueQueued.all(at, limit) as { workflow_id: string }[]),
      ...(statements.expiredLeases.all(at, limit) as { workflow_id: string }[]),
    ].slice(0, limit);
    return candidates.flatMap(({ workflow_id: workflowId }) => {
      const run = statements.lease.get({ owner, expires: at + leaseMs, now: at, workflow_id: workflowId }) as LeasedRun | undefined;
      return run === undefined ? [] : [run];
    });
  });

  async function execute(run: LeasedRun): Promise<void> {
    let outcome: ActivityOutcome;
    let errorCode: string | null = null;
    try {
      outcome = await options.runActivity(run.execution_id, run.phase);
    } catch (error) {
      if (error instanceof ExecutionNotOwned) {
        // Cannot happen on one database (a run references its execution); a run without one has nothing to do.
        outcome = { kind: 'done' };
      } else {
        options.onActivityError?.(run.execution_id, run.phase, error);
        errorCode = error instanceof Error ? error.name : 'error';
        outcome = { kind: 'later', delayMs: backoffMs(Number(run.attempt)) };
      }
    }
    const at = now();
    if (outcome.kind === 'next') statements.advance.run(outcome.phase, at, at, run.workflow_id, owner);
    else if (outcome.kind === 'done') statements.complete.run(at, run.workflow_id, owner);
    else statements.later.run(at + outcome.delayMs, errorCode, at, run.workflow_id, owner);
  }

  /** Arms the one timer: for the next run due, at most `idleWakeMs` away; none while every slot is busy. */
  function arm(): void {
    timers.clearTimeout(timer);
    let delayMs = idleWakeMs;
    if (inFlight.size < concurrency) {
      const next = (statements.nextDue.get() as { at: bigint | number | null }).at;
      if (next !== null) delayMs = Math.min(idleWakeMs, Math.max(MIN_WAKE_MS, Number(next) - now()));
    }
    timer = timers.setTimeout(poll, delayMs);
  }

  function poll(): void {
    if (!running) return;
    lastPollAt = now();
    const free = concurrency - inFlight.size;
    if (free > 0) {
      const runs = leaseDue.immediate(now(), free);
      for (const run of runs) {
        const job = execute(run).finally(() => {
          inFlight.delete(job);
          // A finished run may have queued its next phase or freed a slot: look again at once.
          if (running) setImmediate(poll);
        });
        inFlight.add(job);
      }
    }
    arm();
  }

  return {
    async schedule(executionId, workflowId) {
      const at = now();
      // Without waiting for its own fsync: the execution a run runs is already durable, and at
      // every start each non-terminal execution is scheduled again at its stable id, so a run
      // lost in a power failure is created again (scheduling is idempotent).
      withoutOwnFsync(db, () => {
        createRun(workflowId, executionId, at);
      });
      if (running) setImmediate(poll);
      return Promise.resolve();
    },
    start() {
      if (running) return;
      running = true;
      // Runs a previous process left leased are due now; their activities are idempotent and
      // guarded (a submission is never repeated), so waiting out the old lease gains nothing.
      statements.takeOver.run(now(), now(), owner);
      poll();
    },
    async drain(boundMs) {
      running = false;
      timers.clearTimeout(timer);
      let bound: NodeJS.Timeout | undefined;
      const timedOut = new Promise<'timeout'>((resolve) => {
        bound = setTimeout(() => { resolve('timeout'); }, boundMs);
      });
      const result = await Promise.race([Promise.all(inFlight).then(() => 'drained' as const), timedOut]);
      clearTimeout(bound);
      return { drained: result === 'drained', inFlight: inFlight.size };
    },
    pollers: () => (running && now() - lastPollAt <= 2 * idleWakeMs + 1_000 ? 1 : 0),
  };
}
