// Types of driver.mjs (and the schedule.mjs it re-exports) for the TypeScript tests that import it.
import type { InvariantReport, Violation } from '../../test/proof/check-invariants.js';
import type { RunRegistry } from './processes.mjs';

/** The modes of a run (schedule.mjs `MODES`): the seed chooses; embedded runs are always `single`. */
export type ProofMode = 'single' | 'two_executors' | 'terminations';

export interface ScheduledExecution {
  readonly index: number;
  readonly images: number;
  readonly at: number;
  /** The stack it runs on (0, or 1 in a `two_executors` run). */
  readonly stack: number;
}

export type ChaosEvent =
  | { readonly kind: 'kill'; readonly target: 'executor' | 'ledger' | 'sandbox' | 'temporal'; readonly at: number; readonly stack: number }
  | { readonly kind: 'fault'; readonly fault: Record<string, unknown>; readonly at: number; readonly stack: number }
  /** The workflow run of scheduled execution `execution` terminated (mode `terminations`). */
  | { readonly kind: 'terminate'; readonly execution: number; readonly at: number; readonly stack: number };

export interface Schedule {
  readonly seed: number;
  readonly engine: 'embedded' | 'temporal';
  readonly mode: ProofMode;
  readonly executions: readonly ScheduledExecution[];
  readonly chaos: readonly ChaosEvent[];
}

/**
 * What a chaos event actually did, `at` ms after the load started (`scheduled_at`: when the
 * schedule said). `stack`: `a` or `b` in a two-stack run (absent otherwise, and for the dev server
 * both stacks share).
 */
export type CausedEvent =
  | {
      readonly kind: 'kill';
      readonly target: 'executor' | 'ledger' | 'sandbox' | 'temporal';
      readonly stack?: string;
      readonly scheduled_at: number;
      readonly at: number;
      readonly outcome: 'killed' | 'no_process' | 'pid_reused' | 'start_unknown';
      readonly pid: number | null;
    }
  | {
      readonly kind: 'fault';
      readonly fault: string;
      readonly stack?: string;
      readonly scheduled_at: number;
      readonly at: number;
      readonly outcome: 'set' | 'refused' | 'unreachable';
      readonly status: number | null;
    }
  | {
      readonly kind: 'terminate';
      readonly execution: number;
      readonly scheduled_at: number;
      readonly at: number;
      readonly outcome: 'terminated' | 'no_execution' | 'not_running' | 'unreachable';
      readonly workflow_id: string | null;
    };

/**
 * A violation of the run: the checker's (with the stack, in a two-stack run), or of rest on
 * Temporal — `workflow_run_open` (a run still open once the stack was otherwise at rest),
 * `workflow_run_not_completed` (a run closed in a state other than COMPLETED) — or `run` (nothing
 * was written).
 */
export type RunViolation = (Violation & { readonly stack?: string }) | { readonly rule: 'workflow_run_open' | 'workflow_run_not_completed' | 'run'; readonly subject: string; readonly message: string };

export interface ProofRunResult {
  readonly seed: number;
  readonly engine: 'embedded' | 'temporal';
  readonly mode: ProofMode;
  readonly schedule: Schedule;
  /** The chaos events in schedule order, as they actually happened. */
  readonly events: readonly CausedEvent[];
  readonly outcomes: readonly (ScheduledExecution & { readonly outcome: string; readonly commands: number; readonly errors: readonly string[] })[];
  readonly kills: Readonly<Record<'executor' | 'ledger' | 'sandbox' | 'temporal', number>>;
  readonly faults: number;
  /** Workflow runs the driver terminated. */
  readonly terminations: number;
  /** Runs the executors' closed-run sweep started again (their `workflow_reschedules` rows). */
  readonly rescheduled: number;
  /** The checker's counts, added up over the run's stacks. */
  readonly counts: InvariantReport['counts'] | null;
  readonly violations: readonly RunViolation[];
  /** The run's directory: its first stack's home (removed after a clean run). */
  readonly home: string;
  /** Where the home is kept (a run that broke a rule or gave up on an execution), or null. */
  readonly keptHome: string | null;
  readonly durationMs: number;
}

export const MODES: readonly ProofMode[];
export function prng(seed: number): { next(): number; int(n: number): number; pick<T>(list: readonly T[]): T };
export function scheduleOf(seed: number, engine: 'embedded' | 'temporal'): Schedule;
export function proofRun(options: {
  seed: number;
  engine: 'embedded' | 'temporal';
  workDir: string;
  temporalCli?: string | null;
  log?: (line: string) => void;
  registry?: RunRegistry;
  keepDir?: string | null;
}): Promise<ProofRunResult>;
export function describeEvents(events: readonly CausedEvent[]): string;
