import type { ExecutorClient, ReconciliationEntry, ReconciliationResolved } from './executor-client.js';

/*
 * `lexec executor reconciliation list | resolve` (docs/executions.md "Resolving a
 * reconciliation"): the executor's reconciliation route, reached through the selected profile's
 * handoff with its reconciliation capability — the one credential that may settle or release an
 * execution whose billing was ambiguous. The capability is read from its private file and only
 * ever sent in the Authorization header.
 */

/** The executor to reconcile on and the profile it belongs to (src/stack-client/connect-executor.ts builds it). */
export type ReconciliationConnector = () => Promise<{ readonly profile: string; readonly client: ExecutorClient }>;

export interface ReconciliationRequest {
  readonly connect: ReconciliationConnector;
}

export interface ReconciliationList {
  readonly profile: string;
  readonly executions: readonly ReconciliationEntry[];
}

export type Resolution = { readonly resolution: 'settle'; readonly images_billed?: number; readonly note: string } | { readonly resolution: 'release'; readonly note: string };

export interface ReconciliationResolveResult extends ReconciliationResolved {
  readonly profile: string;
}

export async function listReconciliations(request: ReconciliationRequest): Promise<ReconciliationList> {
  const { profile, client } = await request.connect();
  return { profile, executions: await client.reconciliations() };
}

export async function resolveReconciliation(request: ReconciliationRequest & { readonly executionId: string; readonly resolution: Resolution }): Promise<ReconciliationResolveResult> {
  const { profile, client } = await request.connect();
  return { profile, ...(await client.resolveReconciliation(request.executionId, request.resolution)) };
}
