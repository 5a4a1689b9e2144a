import { join } from 'node:path';

/*
 * Where a managed stack's logs are (spec §6 rule 4; docs/stack-runtime.md "Logs"): the one
 * definition, shared by the writer (the supervisor, rotating-log.ts) and the readers (`stack
 * logs`, `stack status`, a start's readiness-timeout report).
 *
 *   logs/<component>.log      the active file
 *   logs/<component>.log.1    the newest retained generation … .4 the oldest
 *
 * Rotation renames .3→.4 … active→.1 and starts a new active file. Kept free of heavy imports:
 * `stack status` reads log sizes and must start fast.
 */

/**
 * The components with a log: the supervisor's children (their stderr), the supervisor's own
 * events, and a managed_local executor's Temporal server (written by the executor, which renders
 * point at this same directory through `workflow_engine.log_dir`).
 */
export const LOG_COMPONENTS = ['ledger', 'executor', 'sandbox', 'temporal', 'supervisor'] as const;
export type LogComponent = (typeof LOG_COMPONENTS)[number];

/** Retained generations besides the active file (spec §6 rule 4: four). */
export const LOG_RETAINED = 4;

/** `logs/<component>.log` (generation 0, the active file) or `logs/<component>.log.<n>`. */
export function logFilePath(logsDir: string, component: string, generation = 0): string {
  return join(logsDir, generation === 0 ? `${component}.log` : `${component}.log.${generation}`);
}
