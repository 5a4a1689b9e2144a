// Types of processes.mjs for the TypeScript tests that import it.
import type { ChildProcess } from 'node:child_process';

export interface RunRegistry {
  readonly stacks: Map<string, { readonly env: Record<string, string>; readonly stateDir: string }>;
  /** Temporal dev servers a run started itself (a two-stack run's shared engine). */
  readonly servers: Set<{ stop(): Promise<boolean> }>;
  readonly commands: Set<ChildProcess>;
  /** Commands a stop lets end by themselves (a `stack start`) instead of killing them. */
  readonly finishing: Set<ChildProcess>;
  /** Set by stopAll: nothing more is started. */
  stopping: boolean;
}

export function processStat(pid: number): { state: string; startTicks: number } | null;
export function killVerified(pid: number, startTicks: number | null | undefined): 'killed' | 'no_process' | 'pid_reused' | 'start_unknown';
export function publishedProcess(stateDir: string, target: 'executor' | 'ledger' | 'sandbox' | 'temporal'): { pid: number; startTicks: number | null } | null;
export function createRunRegistry(): RunRegistry;
export function lexec(
  args: readonly string[],
  env: Record<string, string>,
  timeoutMs: number,
  registry?: RunRegistry | null,
  options?: { finishOnStop?: boolean },
): Promise<{ code: number; stdout: string; stderr: string }>;
export function stopStack(stack: { env: Record<string, string>; stateDir: string }, registry?: RunRegistry | null): Promise<{ stopped: boolean; output: string; killed: number }>;
export function stopAll(registry: RunRegistry): Promise<void>;
export function settleHome(home: string, options: { keep: boolean; keepDir?: string | null }): string | null;
