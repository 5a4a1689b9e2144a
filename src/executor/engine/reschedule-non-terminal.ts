import type { ExecutionStore } from '../store/execution-store.js';
import { backoffMs } from './embedded-engine.js';
import type { ExecutionScheduler } from '../execution-scheduler.js';

export interface RescheduleProgress {
  /** Resolves when every non-terminal execution found at start is scheduled, or the loop was stopped. */
  readonly done: Promise<{ readonly scheduled: number; readonly stopped: boolean }>;
  stop(): void;
}

/**
 * Restart recovery (spec §1.3): every non-terminal execution is scheduled again at its stable
 * workflow id — a no-op for one whose run is still known to the engine, a new start for a
 * `pending` one whose hand-off was lost — and, on an engine that binds runs to a worker, released
 * from the previous process's worker (as is the run of a parked one). Scheduling creates no
 * provider or financial effect (every phase decides from the database). An engine that cannot be
 * reached yet (a Temporal server still starting, or away) is retried with backoff until it
 * answers or the executor stops; nothing is dropped meanwhile, and the executions stay readable.
 */
export function rescheduleNonTerminal(options: {
  readonly store: ExecutionStore;
  readonly scheduler: ExecutionScheduler;
  readonly onRetry?: (failures: number, remaining: number) => void;
}): RescheduleProgress {
  const { store, scheduler } = options;
  const state = { stopped: false };
  let wake: (() => void) | undefined;
  const pause = (ms: number) =>
    new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, ms);
      wake = () => {
        clearTimeout(timer);
        resolve();
      };
    });
  const stopped = () => state.stopped;

  async function run(): Promise<{ scheduled: number; stopped: boolean }> {
    const queue = store.nonTerminal();
    let next = 0;
    for (let failures = 0; next < queue.length && !stopped(); ) {
      const execution = queue[next];
      if (execution === undefined) break;
      try {
        await scheduler.schedule(execution.execution_id, execution.workflow_id);
        await scheduler.release?.(execution.workflow_id);
        if (execution.state === 'pending') store.markScheduled(execution.execution_id);
        next += 1;
        failures = 0;
      } catch {
        failures += 1;
        options.onRetry?.(failures, queue.length - next);
        await pause(Math.min(backoffMs(failures), 10_000));
      }
    }
    // A parked execution whose ledger record was not answered yet may still have its run open,
    // opening that record for a phase the previous process left: let go of that process's worker
    // too (only those: the parked ones whose record is open wait on a human, not on a run).
    if (scheduler.release !== undefined) {
      for (const parked of store.awaitingLedgerRecord()) {
        if (stopped()) break;
        await scheduler.release(parked.workflow_id);
      }
    }
    return { scheduled: next, stopped: stopped() };
  }

  return {
    done: run(),
    stop() {
      state.stopped = true;
      wake?.();
    },
  };
}
