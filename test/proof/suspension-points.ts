import type { CrashPoint } from '../../src/crash-points.js';

/**
 * The crash points of an operator suspending and resuming an agent (docs/reliability.md "Crash
 * points"). They are on no execution's path, so the execution matrix (crash-matrix.ts) leaves them
 * to test/proof/agent-suspension.test.ts, which kills the ledger of a real stack at each of them.
 */
export const SUSPENSION_POINTS = ['ledger.during_suspend', 'ledger.after_suspend_commit', 'ledger.after_resume_commit'] as const satisfies readonly CrashPoint[];
export type SuspensionPoint = (typeof SUSPENSION_POINTS)[number];

/**
 * Every operator action's crash points, on no execution's path either: the suspension's, and an
 * approver's decision (test/proof/audit-crash.test.ts kills a `lexec ledger serve` there and finds
 * the decision's audit event committed with it).
 */
export const OPERATOR_POINTS = [...SUSPENSION_POINTS, 'ledger.after_decision_commit'] as const satisfies readonly CrashPoint[];
export type OperatorPoint = (typeof OPERATOR_POINTS)[number];
