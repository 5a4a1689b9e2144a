import { formatUnits } from '../../domain/money.js';
import type { LedgerEvent } from '../wire/answers.js';

/*
 * A webhook sink of format `slack` receives a Slack incoming-webhook message describing the
 * event in plain words: what happened, to which agent, the amount as exact USD, the target, the
 * authorization and the event id. Made from the event alone, which never holds a prompt.
 */

const WORDS: Readonly<Record<string, string>> = {
  'authorization.requested': 'requested a spend authorization',
  'authorization.approved': 'was approved a spend authorization',
  'authorization.denied': 'was denied a spend authorization',
  'authorization.expired': 'let a spend authorization expire',
  'authorization.cancelled': 'had a spend authorization cancelled',
  'authorization.refused': 'was refused a spend authorization',
  'approval.waiting': 'waits for a human to approve a spend authorization',
  'authorization.settled': 'settled a spend authorization',
  'authorization.released': 'released a spend authorization',
  'reconciliation.opened': 'has a spend authorization to reconcile',
  'reconciliation.resolved': 'had a reconciliation resolved',
  'agent.suspended': 'was suspended',
  'agent.resumed': 'was resumed',
  'budget.threshold_crossed': 'crossed a budget threshold',
};

export function slackMessage(event: LedgerEvent): { text: string } {
  const agent = event.agent_name ?? event.agent_id ?? 'the ledger';
  const what = WORDS[event.type] ?? `recorded ${event.type}`;
  const parts = [`lexec: agent ${agent} ${what}`];
  if (event.amount_units !== null) parts.push(`for ${formatUnits(event.amount_units, event.currency)}`);
  if (event.target_id !== null) parts.push(`on target ${event.target_id}`);
  const ids = [`event ${event.event_id}`, ...(event.authorization_id === null ? [] : [`authorization ${event.authorization_id}`])];
  return { text: `${parts.join(' ')} (${event.type}; ${ids.join(', ')}).` };
}
