import type { ExecutionPhase } from '../domain/execution-states.js';
import type { ExecutionScheduler } from '../execution-scheduler.js';
import type { EngineSample } from '../readiness-monitor.js';

/** What running one phase of an execution decided. */
export type ActivityOutcome =
  | { readonly kind: 'next'; readonly phase: ExecutionPhase }
  | { readonly kind: 'done' }
  | { readonly kind: 'later'; readonly delayMs: number };

/** Runs one phase of one execution. All truth lives in the executor's database. */
export type RunActivity = (executionId: string, phase: ExecutionPhase) => Promise<ActivityOutcome>;

/**
 * The executor's workflow engine (ARCHITECTURE.md "Workflow engine: three modes, one port"):
 * `embedded`, `managed_local` and `external` all run the same runner phases and differ only in
 * where runs and timers are kept. The executor talks to whichever it was configured with through
 * this port alone.
 */
export interface WorkflowEngine extends ExecutionScheduler {
  /** Starts running work (the worker); resolves once it is polling or has taken over old runs. */
  start(): Promise<void>;
  /** One task-queue sample for the readiness monitor (spec §3 rules 1, 5-7). */
  probe(request: { readonly timeoutMs: number }): Promise<EngineSample>;
  /** Stops taking new work and waits up to `boundMs` for work in flight. */
  drain(boundMs: number): Promise<{ drained: boolean; inFlight: number }>;
  /** Releases connections and children; after drain. */
  close(): Promise<void>;
}
