import { createExecutorClient, type ExecutorClient } from '../executor/client/executor-client.js';
import type { ReconciliationConnector } from '../executor/client/executor-reconciliation.js';
import { UserError } from '../errors.js';
import { activeStack, readHandoffCredential, type ActiveStack } from './locate-stack.js';

/*
 * A running stack's executor, by role: `caller` (submit and read executions — `lexec run`, the
 * agent, the console's detail views) or `reconciliation` (every agent's executions and the
 * reconciliation route — `lexec executor reconciliation`, the console). The capability comes
 * from the file the handoff names and is only ever sent in the Authorization header.
 */

export type ExecutorRole = 'caller' | 'reconciliation';

export async function connectStackExecutor(stack: ActiveStack, role: ExecutorRole): Promise<ExecutorClient> {
  const executor = stack.handoff.executor;
  if (executor === undefined) {
    throw new UserError('no_executor_on_host', `Profile "${stack.paths.name}" is a ledger host: it runs no executor, so it has no executions to show or run.`, {
      nextStep: 'Run executions on an executor host (docs/deployment.md "Roles"); this host serves the ledger: policies, approvals, spend.',
    });
  }
  const reloadToken = () => readHandoffCredential(stack, role);
  return createExecutorClient({ url: executor.endpoint, token: await reloadToken(), reloadToken });
}

/** What `lexec executor reconciliation list|resolve` are given: the selected profile's executor, with its reconciliation capability. */
export function reconciliationConnector(env: NodeJS.ProcessEnv, profile: string | undefined): ReconciliationConnector {
  return async () => {
    const stack = await activeStack(env, profile);
    return { profile: stack.paths.name, client: await connectStackExecutor(stack, 'reconciliation') };
  };
}
