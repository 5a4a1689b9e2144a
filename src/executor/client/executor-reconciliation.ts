import { createExecutorClient, type ReconciliationEntry, type ReconciliationResolved } from './executor-client.js';
import { activeStack, readHandoffCredential } from '../../launcher/handoff/server-target.js';

/*
 * `lexec executor reconciliation list | resolve` (docs/executions.md "Resolving a
 * reconciliation"): the executor's reconciliation route, reached through the selected profile's
 * handoff with its reconciliation capability — the one credential that may settle or release an
 * execution whose billing was ambiguous. The capability is read from its private file and only
 * ever sent in the Authorization header.
 */

export interface ReconciliationRequest {
  readonly env: NodeJS.ProcessEnv;
  readonly profile: string | undefined;
}

export interface ReconciliationList {
  readonly profile: string;
  readonly executions: readonly ReconciliationEntry[];
}

export type Resolution = { readonly resolution: 'settle'; readonly images_billed?: number; readonly note: string } | { readonly resolution: 'release'; readonly note: string };

export interface ReconciliationResolveResult extends ReconciliationResolved {
  readonly profile: string;
}

async function reconciliationClient(request: ReconciliationRequest) {
  const stack = await activeStack(request.env, request.profile);
  const token = await readHandoffCredential(stack, 'reconciliation');
  return { profile: stack.paths.name, client: createExecutorClient({ url: stack.handoff.executor.endpoint, token }) };
}

export async function listReconciliations(request: ReconciliationRequest): Promise<ReconciliationList> {
  const { profile, client } = await reconciliationClient(request);
  return { profile, executions: await client.reconciliations() };
}

export async function resolveReconciliation(request: ReconciliationRequest & { readonly executionId: string; readonly resolution: Resolution }): Promise<ReconciliationResolveResult> {
  const { profile, client } = await reconciliationClient(request);
  return { profile, ...(await client.resolveReconciliation(request.executionId, request.resolution)) };
}
