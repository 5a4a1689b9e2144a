// Types of driver.mjs for the TypeScript tests that import it.
import type { InvariantReport, Violation } from '../../test/proof/check-invariants.js';

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

export interface ProofRunResult {
  readonly seed: number;
  readonly engine: 'embedded' | 'temporal';
  readonly schedule: Schedule;
  readonly outcomes: readonly (ScheduledExecution & { readonly outcome: string; readonly commands: number; readonly errors: readonly string[] })[];
  readonly kills: Readonly<Record<'executor' | 'ledger' | 'sandbox' | 'temporal', number>>;
  readonly faults: number;
  readonly counts: InvariantReport['counts'] | null;
  readonly violations: readonly Violation[];
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
}): Promise<ProofRunResult>;
