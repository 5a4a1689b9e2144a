// Types of driver.mjs for the TypeScript tests that import it.
import type { InvariantReport, Violation } from '../../test/proof/check-invariants.js';
import type { RunRegistry } from './processes.mjs';

export interface ScheduledExecution {
  readonly index: number;
  readonly images: number;
  readonly at: number;
}

export type ChaosEvent =
  | { readonly kind: 'kill'; readonly target: 'executor' | 'ledger' | 'sandbox' | 'temporal'; readonly at: number }
  | { readonly kind: 'fault'; readonly fault: Record<string, unknown>; readonly at: number };

export interface Schedule {
  readonly seed: number;
  readonly engine: 'embedded' | 'temporal';
  readonly executions: readonly ScheduledExecution[];
  readonly chaos: readonly ChaosEvent[];
}

/** What a chaos event actually did, `at` ms after the load started (`scheduled_at`: when the schedule said). */
export type CausedEvent =
  | {
      readonly kind: 'kill';
      readonly target: 'executor' | 'ledger' | 'sandbox' | 'temporal';
      readonly scheduled_at: number;
      readonly at: number;
      readonly outcome: 'killed' | 'no_process' | 'pid_reused' | 'start_unknown';
      readonly pid: number | null;
    }
  | {
      readonly kind: 'fault';
      readonly fault: string;
      readonly scheduled_at: number;
      readonly at: number;
      readonly outcome: 'set' | 'refused' | 'unreachable';
      readonly status: number | null;
    };

export interface ProofRunResult {
  readonly seed: number;
  readonly engine: 'embedded' | 'temporal';
  readonly schedule: Schedule;
  /** The chaos events in schedule order, as they actually happened. */
  readonly events: readonly CausedEvent[];
  readonly outcomes: readonly (ScheduledExecution & { readonly outcome: string; readonly commands: number; readonly errors: readonly string[] })[];
  readonly kills: Readonly<Record<'executor' | 'ledger' | 'sandbox' | 'temporal', number>>;
  readonly faults: number;
  readonly counts: InvariantReport['counts'] | null;
  readonly violations: readonly Violation[];
  /** The run's stack home (removed after a clean run). */
  readonly home: string;
  /** Where the home is kept (a run that broke a rule or gave up on an execution), or null. */
  readonly keptHome: string | null;
  readonly durationMs: number;
}

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
