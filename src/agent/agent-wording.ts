import { UserError } from '../errors.js';

/*
 * The agent's words for failures of the stack: what happened, without the endpoints the agent
 * never sees, and what to tell the operator.
 */

const STACK_MESSAGES: Readonly<Record<string, string>> = {
  executor_unreachable: "The stack's executor does not answer.",
  ledger_unreachable: "The stack's ledger does not answer.",
  executor_not_ready: "The stack's executor is not admitting executions right now.",
  executor_server_error: "The stack's executor failed to answer.",
  ledger_server_error: "The stack's ledger failed to answer.",
  executor_bad_response: "The stack's executor answered with something lexec cannot read (a version mismatch?).",
  ledger_bad_response: "The stack's ledger answered with something lexec cannot read (a version mismatch?).",
  executor_unauthorized: "The stack's executor refused this agent's caller credential: an operator revoked it, or it is not this stack's.",
  ledger_unauthorized: "The stack's ledger refused this agent's credential: an operator revoked it, or it is not this stack's.",
};

/** What the operator does about a refused credential: a revoked one is not fixed by a check of the stack. */
const CREDENTIAL_STEP = 'Ask the operator for a capability the stack accepts (`lexec ledger credentials list` shows which are revoked); nothing was requested or spent.';

/** An error already worded for the agent (what stays, how to resume): shown as it is. */
export class AgentWorded extends UserError {}

/**
 * The agent's words for a failure of the stack: what happened without the endpoint, and what to
 * tell the operator. Other errors keep their own message.
 */
export function agentWording(error: UserError): { message: string; nextStep: string } {
  // The executor's own words name its URL, which the agent never sees (it read "<url>").
  if (error.code === 'executor_not_found' && !(error instanceof AgentWorded)) {
    return { message: "The stack's executor has no execution with that id.", nextStep: 'Use an execution_id a generate_images call returned.' };
  }
  const message = error instanceof AgentWorded ? undefined : STACK_MESSAGES[error.code];
  if (message === undefined) return { message: error.message, nextStep: error.nextStep };
  if (error.code.endsWith('_unauthorized')) return { message, nextStep: CREDENTIAL_STEP };
  return { message, nextStep: 'Ask the operator to check the stack (`lexec stack status`), then call again.' };
}
