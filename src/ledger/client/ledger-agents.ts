import { UserError } from '../../errors.js';
import type { LedgerAgent, LedgerAgentSuspension } from '../wire/answers.js';
import type { LedgerConnector } from './ledger-connector.js';
import { discardPendingCredential, registerPendingCredential, writePendingCredential, type IssuedCredential } from './ledger-credentials.js';

export interface AddAgentRequest {
  readonly target: LedgerConnector;
  readonly name: string;
  /** Where to write the agent's new capability; null adds the agent without one. */
  readonly credentialFile: string | null;
}

export interface AddAgentResult {
  readonly agent: LedgerAgent;
  readonly credential: IssuedCredential | null;
}

export interface ListAgentsResult {
  readonly agents: readonly LedgerAgent[];
}

/**
 * `ledger agents add`: adds the agent and, with a credential file, issues its capability. The
 * file is written before the agent is added, so a bad path changes nothing at the ledger.
 */
export async function addLedgerAgent(request: AddAgentRequest): Promise<AddAgentResult> {
  const client = await request.target('admin');
  const pending = request.credentialFile === null ? null : await writePendingCredential(request.credentialFile, 'agent');
  let agent: LedgerAgent;
  try {
    agent = await client.addAgent(request.name);
  } catch (error) {
    if (pending !== null) await discardPendingCredential(pending);
    throw error;
  }
  if (pending === null) return { agent, credential: null };
  try {
    return { agent, credential: await registerPendingCredential(client, pending, agent.agent_id) };
  } catch (error) {
    if (!(error instanceof UserError)) throw error;
    // The agent exists now; say so, and how to give it a credential, rather than hide it.
    throw new UserError(error.code, `${error.message} The agent ${agent.agent_id} was added, but its credential was not registered; the credential file was removed.`, {
      nextStep: `Once the problem is fixed, run \`lexec ledger credentials create --kind agent --agent-id ${agent.agent_id} --credential-file …\`.`,
      issues: error.issues,
      exitCode: error.exitCode,
    });
  }
}

/** `ledger agents list` (admin token). */
export async function listLedgerAgents(target: LedgerConnector): Promise<ListAgentsResult> {
  const client = await target('admin');
  return { agents: await client.listAgents() };
}

/** `ledger agents suspend` and `resume`: where the agent stands after the call. */
export interface AgentSuspensionResult {
  readonly agent_id: string;
  readonly name: string;
  /** `suspended` or `active`. */
  readonly status: string;
  /** Requested and approved authorizations nobody had claimed, cancelled by this very call (0 for a resume or a repeat). */
  readonly cancelled_authorizations: number;
  /** false when the agent already stood so: nothing was changed. */
  readonly changed: boolean;
  readonly suspended_at: string | null;
  readonly suspension_reason: string | null;
  /** `operator`, or `velocity_breaker` (suspended automatically by its policy's runaway-loop breaker); null while active. */
  readonly suspended_by: string | null;
}

function suspensionResult(answer: LedgerAgentSuspension): AgentSuspensionResult {
  const { agent } = answer;
  return {
    agent_id: agent.agent_id,
    name: agent.name,
    status: agent.status,
    cancelled_authorizations: answer.cancelled_authorizations,
    changed: answer.changed,
    suspended_at: agent.suspended_at,
    suspension_reason: agent.suspension_reason,
    suspended_by: agent.suspended_by,
  };
}

/** `ledger agents suspend` (admin token): new spend requests refused, unclaimed authorizations cancelled; executions under way finish. */
export async function suspendLedgerAgent(request: { readonly target: LedgerConnector; readonly agentId: string; readonly reason: string | null }): Promise<AgentSuspensionResult> {
  const client = await request.target('admin');
  return suspensionResult(await client.suspendAgent(request.agentId, request.reason));
}

/** `ledger agents resume` (admin token): the agent may request spend again. */
export async function resumeLedgerAgent(request: { readonly target: LedgerConnector; readonly agentId: string }): Promise<AgentSuspensionResult> {
  const client = await request.target('admin');
  return suspensionResult(await client.resumeAgent(request.agentId));
}
