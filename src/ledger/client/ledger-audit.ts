import { formatUnits } from '../../domain/money.js';
import type { LedgerAuditEvent, LedgerAuditPage } from '../wire/answers.js';
import type { LedgerConnector } from './ledger-connector.js';

/** `ledger audit`: one page of the audit trail of operator actions, oldest first; `next_after` continues it. */
export type AuditResult = LedgerAuditPage;

export interface AuditRequest {
  readonly target: LedgerConnector;
  /** Only events at or after this instant (ms since the epoch); null: from the first. */
  readonly since: number | null;
  /** Only events after this audit id (a previous page's `next_after`). */
  readonly after: string | null;
  readonly agentId: string | null;
  readonly limit: number | null;
}

/** `ledger audit` (admin token): who did what to which agent, authorization, record or credential, and when. */
export async function readLedgerAudit(request: AuditRequest): Promise<AuditResult> {
  const client = await request.target('admin');
  return client.audit({
    since: request.since === null ? undefined : new Date(request.since).toISOString(),
    after: request.after ?? undefined,
    agentId: request.agentId ?? undefined,
    limit: request.limit ?? undefined,
  });
}

type StateValue = NonNullable<LedgerAuditEvent['after']>[string];

/** A value of a state as a person reads it: an amount (`…_units`) in its currency, null as `none`. */
function shown(key: string, value: StateValue, currency: string): string {
  if (value === null) return 'none';
  if (key.endsWith('_units') && typeof value === 'string' && /^\d{1,30}$/.test(value)) return formatUnits(BigInt(value), currency);
  return String(value);
}

/**
 * What an event changed, in one line: `status active → suspended; cancelled_authorizations 1`.
 * Each field that differs reads `before → after`; one only before or only after, its value.
 * Shared by the CLI's table and the console's Audit view, for any action a ledger records
 * (those added later included); the caller makes it safe for its surface.
 */
export function auditChange(event: Pick<LedgerAuditEvent, 'before' | 'after'>): string {
  const before = event.before ?? {};
  const after = event.after ?? {};
  const currency = typeof after.currency === 'string' ? after.currency : 'USD';
  const keys = [...new Set([...Object.keys(before), ...Object.keys(after)])].filter((key) => key !== 'currency');
  return keys
    .flatMap((key) => {
      const was = before[key];
      const is = after[key];
      if (was !== undefined && is !== undefined) return was === is ? [] : [`${key} ${shown(key, was, currency)} → ${shown(key, is, currency)}`];
      const only = is === undefined ? was : is;
      return only === undefined ? [] : [`${key} ${shown(key, only, currency)}`];
    })
    .join('; ');
}

/**
 * Issue 28's actions in words for a person (the table's action column); every other action reads
 * as the ledger names it (`agent_suspended`), and so does one this client does not know yet.
 * `--json` keeps the ledger's name for every action.
 */
const ACTION_WORDS: Readonly<Record<string, string>> = {
  webhook_added: 'webhook sink added',
  webhook_removed: 'webhook sink removed',
  budget_changed: 'installation budget changed',
};

export function auditActionWords(action: string): string {
  return Object.hasOwn(ACTION_WORDS, action) ? (ACTION_WORDS[action] ?? action) : action;
}

/** Who acted, in a few words: `admin admin`, `approver cred_…`, or `ledger` for the ledger's own acts. */
export function auditActor(event: Pick<LedgerAuditEvent, 'actor_kind' | 'actor_credential_id' | 'actor_name'>): string {
  const who = event.actor_credential_id === null ? event.actor_kind : `${event.actor_kind} ${event.actor_credential_id}`;
  return event.actor_name === null ? who : `${event.actor_name} (${who})`;
}
