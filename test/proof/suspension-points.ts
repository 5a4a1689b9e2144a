import type { CrashPoint } from '../../src/crash-points.js';

/**
 * The crash points of an operator suspending and resuming an agent (docs/reliability.md "Crash
 * points"). They are on no execution's path, so the execution matrix (crash-matrix.ts) leaves them
 * to test/proof/agent-suspension.test.ts, which kills the ledger of a real stack at each of them.
 */
export const SUSPENSION_POINTS = ['ledger.during_suspend', 'ledger.after_suspend_commit', 'ledger.after_resume_commit'] as const satisfies readonly CrashPoint[];
export type SuspensionPoint = (typeof SUSPENSION_POINTS)[number];
