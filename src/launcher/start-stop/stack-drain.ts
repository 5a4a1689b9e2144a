import { setTimeout as sleep } from 'node:timers/promises';
import { IN_FLIGHT_STATES } from '../../executor/domain/execution-states.js';
import { countExecutions } from '../status/executor-database.js';

/*
 * `stack stop --wait` (docs/stack-runtime.md "Stop"): with the handoff already withdrawn (no new
 * client finds the stack), the stop waits while the executor's database has executions in
 * flight, so they finish and settle before anything is stopped. Clients already connected keep
 * working: a `lexec run` still follows its execution and saves its images. Executions a client
 * admits meanwhile (a run whose approval came) are waited for too. Read-only: the database is
 * opened read-only for each count, and nothing is signalled.
 */

/** How often the count is read again. */
const POLL_INTERVAL_MS = 500;
/**
 * After the last execution finished, the time its client gets to fetch the images before the
 * executor stops (a `lexec run` asks for them as soon as its follow sees the change).
 */
export const FETCH_GRACE_MS = 3_000;

export interface DrainOutcome {
  readonly outcome: 'drained' | 'timed_out' | 'interrupted';
  readonly waited_ms: number;
  /** Executions that finished while the stop waited. */
  readonly finished: number;
  /** Still in flight when the wait ended (0 when drained). */
  readonly remaining: number;
}

/** What a drain reports while it waits. */
export type DrainEvent =
  | { readonly kind: 'draining'; readonly count: number; readonly bound_ms: number }
  | { readonly kind: 'drain_progress'; readonly remaining: number };

export interface DrainOptions {
  readonly databasePath: string;
  /** The count when the stop began (> 0). */
  readonly initial: number;
  readonly boundMs: number;
  /** Ctrl-C: the wait ends at once with `interrupted`. */
  readonly signal?: AbortSignal;
  readonly progress: (event: DrainEvent) => void;
}

/** Waits until nothing is in flight, the bound passes, or the signal aborts. A count that cannot be read is taken as unchanged. */
export async function drainExecutions(options: DrainOptions): Promise<DrainOutcome> {
  const started = Date.now();
  const deadline = started + options.boundMs;
  let remaining = options.initial;
  let finished = 0;
  options.progress({ kind: 'draining', count: remaining, bound_ms: options.boundMs });
  // A call, so each check reads the signal afresh after an await.
  const aborted = () => options.signal?.aborted === true;
  const end = (outcome: DrainOutcome['outcome']): DrainOutcome => ({ outcome, waited_ms: Date.now() - started, finished, remaining });
  for (;;) {
    if (aborted()) return end('interrupted');
    if (remaining === 0) {
      if (finished > 0) await sleep(FETCH_GRACE_MS, undefined, { signal: options.signal }).catch(() => undefined);
      return end(aborted() ? 'interrupted' : 'drained');
    }
    if (Date.now() >= deadline) return end('timed_out');
    await sleep(Math.min(POLL_INTERVAL_MS, Math.max(0, deadline - Date.now())), undefined, { signal: options.signal }).catch(() => undefined);
    const count = await countExecutions(options.databasePath, IN_FLIGHT_STATES);
    if (count === null || count === remaining) continue;
    // A drop is work finished; a rise is work a connected client admitted meanwhile.
    if (count < remaining) finished += remaining - count;
    remaining = count;
    options.progress({ kind: 'drain_progress', remaining });
  }
}
