import { UsageError, UserError } from '../../errors.js';
import type { LedgerClient } from './ledger-client.js';

/*
 * The agent a ledger verb is about, as an operator names it: its id (`agt_…`), its name (as
 * `lexec ledger agents add` gave it), or nothing — the running stack's own local agent (the one
 * `lexec run` spends as) in profile mode.
 */

export const AGENT_ID = /^agt_[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
export const AGENT_NAME = /^[a-z0-9][a-z0-9_-]{0,63}$/;

export interface StackAgentRef {
  readonly agent_id: string;
  readonly name: string;
}

export interface AgentChoice {
  /** `--agent-id` as given (an id or a name), or null. */
  readonly given: string | null;
  /** The stack's own agent in profile mode; null in manual mode (--url), where there is none. */
  readonly stackAgent: () => Promise<StackAgentRef | null>;
}

export async function resolveAgentId(client: LedgerClient, choice: AgentChoice): Promise<string> {
  if (choice.given === null) {
    const own = await choice.stackAgent();
    if (own !== null) return own.agent_id;
    throw new UsageError('usage_error', '--agent-id is required with --url (manual mode): there is no profile whose agent to default to.', {
      nextStep: 'Pass --agent-id <agent id or name> (`lexec ledger agents list` shows them).',
    });
  }
  if (AGENT_ID.test(choice.given)) return choice.given;
  const agents = await client.listAgents();
  const named = agents.find((agent) => agent.name === choice.given);
  if (named !== undefined) return named.agent_id;
  const names = agents.map((agent) => agent.name).join(', ');
  throw new UserError('agent_not_found', `The ledger has no agent named "${choice.given}"${names === '' ? ' (it has no agents yet)' : `; its agents: ${names}`}.`, {
    nextStep: 'Pass an agent id or name that `lexec ledger agents list` shows.',
    issues: [{ path: '--agent-id', message: 'no agent with this id or name' }],
  });
}
