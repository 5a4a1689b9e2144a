import { createHash } from 'node:crypto';

/*
 * Execution states (docs/executions.md). Issue 4 admits and persists; the engine (next issue)
 * moves executions on from `scheduled`.
 */
export const EXECUTION_STATES = ['pending', 'scheduled', 'running', 'succeeded', 'failed', 'reconciliation'] as const;
export type ExecutionState = (typeof EXECUTION_STATES)[number];

/** Phases of a running execution; also the only thing besides the id in engine payloads. */
export const EXECUTION_PHASES = ['submit_provider', 'poll_provider_operation', 'store_artifacts', 'settle'] as const;
export type ExecutionPhase = (typeof EXECUTION_PHASES)[number];

export const TERMINAL_STATES: readonly ExecutionState[] = ['succeeded', 'failed'];
/** Admitted and not finished: each holds its authorization (a stop lets it resume at the next start). */
export const IN_FLIGHT_STATES: readonly ExecutionState[] = ['pending', 'scheduled', 'running'];

/**
 * The execution id for a spend authorization: derived, not random, so that a crash between the
 * ledger claim and the local insert is repaired by the retry — it claims again with the same id,
 * which the ledger treats as a replay.
 */
export function executionIdFor(spendAuthTokenId: string): string {
  return `exe_${createHash('sha256').update(`lexec/execution/v1/${spendAuthTokenId}`).digest('hex').slice(0, 32)}`;
}

/** The stable workflow id of an execution (one active run per id). */
export function workflowIdFor(executionId: string): string {
  return `lexec-execution-${executionId}`;
}

/** What the operator should do next, by state and reason (shown in execution detail). */
export function recommendedAction(state: ExecutionState, reason: string | null = null): { code: string; description: string } {
  switch (state) {
    case 'pending':
      return { code: 'retry_admission', description: 'Not yet scheduled: resubmit the identical request to schedule it (no second authorization is used).' };
    case 'scheduled':
    case 'running':
      return { code: 'wait', description: 'In progress: poll this execution until it is terminal.' };
    case 'succeeded':
      return { code: 'none', description: 'Done: fetch the artifacts.' };
    case 'failed':
      return { code: 'none', description: 'Failed before any charge; the authorization was released.' };
    case 'reconciliation':
      if (reason === 'deadline_expired') {
        // The poll-existing path is closed for good; re-inspecting the provider operation is not offered.
        return {
          code: 'contact_provider_support',
          description: "The operation's original deadline passed: contact the provider's support with the request id, and keep inspecting this execution and its reconciliation record. No replacement operation is ever sent.",
        };
      }
      if (reason === 'receipt_rejected') {
        return {
          code: 'upgrade_ledger_then_reconcile',
          description: 'The ledger refused the precise receipt (it is kept here): upgrade the installation, then resolve the reconciliation record. Never retry the provider or drop precision.',
        };
      }
      return { code: 'inspect_reconciliation', description: 'Billing needs a human: inspect the reconciliation record with the evidence kept here.' };
  }
}
