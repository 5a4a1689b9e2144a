import type Database from 'better-sqlite3';
import type { CredentialKind } from '../../credentials/capability.js';
import { redactSecretShapes } from '../../domain/secret-text.js';
import { BugError } from '../../errors.js';
import type { LedgerAuditEvent, LedgerAuditPage, LedgerAuditState } from '../wire/answers.js';

/*
 * The audit trail of operator actions (ledger migration 8, `audit_events`, rebuilt by 14; docs/ledger.md "Audit
 * trail"): who did what, when, with the state before and after.
 *
 * Writing. `record(entry)` appends one event, and must be called INSIDE the IMMEDIATE transaction
 * of the change it records (the ledger store's `immediate`, `commitThenReach`), once the change
 * is made: the event commits with the change or not at all, so no crash can leave one without
 * the other. Called outside a transaction it throws (a bug). Call it only when something
 * changed: an idempotent repeat, or a change refused, records nothing.
 *
 * Credential revocation and rotation (issue 27 item 2) record through `credentialChanged`, in the
 * transaction that revokes or rotates:
 *   audit.credentialChanged({ action: 'credential_revoked', actor, credential, at,
 *     before: { status: 'active' }, after: { status: 'revoked' } });
 *   audit.credentialChanged({ action: 'credential_rotated', actor, credential: old, at,
 *     after: { replaced_by: newCredentialId, grace_until: isoTime } });
 * where `actor` is the route's authenticated principal (or LEDGER_ACTOR for the ledger's own
 * act) and `credential` the credential acted on (its id, kind and agent).
 *
 * What is stored is safe to show anyone who may read the trail: `before` and `after` hold
 * ledger-made values (statuses, versions, amounts as decimal strings, ids), never a capability,
 * a digest or a prompt; free text goes only in `reason`, the operator's words, which are redacted
 * of secret-shaped text (src/domain/secret-text.ts) and cut to 500 characters before they are
 * written — and string values of `before`/`after` are redacted too, should a caller err.
 *
 * Reading. `page` answers events oldest first by `audit_id`, which only grows, in commit order
 * (one writer at a time): a reader that continues with `after` = the last id it saw never misses
 * an event appended meanwhile.
 */

/** Every kind of operator action the trail records (the migration's CHECK list). */
export const AUDIT_ACTIONS = [
  'agent_added',
  'agent_suspended',
  'agent_resumed',
  'policy_changed',
  'authorization_approved',
  'authorization_denied',
  'reconciliation_resolved',
  'credential_registered',
  'credential_revoked',
  'credential_rotated',
  // Issue 28 (ledger migration 14): a webhook sink added or removed, the installation budget changed.
  'webhook_added',
  'webhook_removed',
  'budget_changed',
  // Issue 29 (ledger migration 15): an executor host's enrolment token issued, revoked, redeemed.
  'enrolment_issued',
  'enrolment_revoked',
  'enrolment_redeemed',
] as const;
export type AuditAction = (typeof AUDIT_ACTIONS)[number];

/** Who acted: an authenticated credential (the route's principal), or the ledger itself. */
export type AuditActor = { readonly credential_id: string; readonly kind: CredentialKind } | { readonly credential_id: null; readonly kind: 'ledger' };

/** An actor who presented a credential: every route's principal (`Principal`, ledger-admin.ts). */
export type CredentialActor = Extract<AuditActor, { readonly credential_id: string }>;

/** The ledger's own acts: the velocity breaker's suspension, the default policy applied at start, its admin credential. */
export const LEDGER_ACTOR: AuditActor = { credential_id: null, kind: 'ledger' };

/** The longest reason kept (the API's free-text bound). */
export const MAX_AUDIT_REASON = 500;

export interface AuditEntry {
  readonly actor: AuditActor;
  readonly action: AuditAction;
  /** The agent the action concerns, if any (an agent's credential: its agent). */
  readonly agentId: string | null;
  /** What was acted on: a token id, a record id, a credential id, an agent id. */
  readonly subjectId: string;
  readonly before?: LedgerAuditState | null;
  readonly after?: LedgerAuditState | null;
  /** The operator's own words (a suspension or decision reason, a resolution note). */
  readonly reason?: string | null;
  /** When (ms since the epoch): the time the change itself records. */
  readonly at: number;
}

/** A credential acted on, as the credentials table has it. */
export interface AuditedCredential {
  readonly credential_id: string;
  readonly kind: CredentialKind;
  readonly agent_id: string | null;
}

export interface AuditQuery {
  /** Only events at or after this instant (ms since the epoch). */
  readonly since: number | null;
  /** Only events after this audit id (the previous page's `next_after`). */
  readonly after: bigint | null;
  readonly agentId: string | null;
  readonly limit: number;
}

interface AuditRow {
  audit_id: bigint;
  at: bigint;
  actor_credential_id: string | null;
  actor_kind: string;
  action: string;
  agent_id: string | null;
  subject_id: string;
  before: string | null;
  after: string | null;
  reason: string | null;
  /** The actor credential's holder name (joined when read; null for unnamed credentials and the ledger). */
  actor_name: string | null;
}

/** Free text as the trail keeps and shows it: secret shapes redacted, at most 500 characters. */
function safeReason(text: string): string {
  return redactSecretShapes(text).slice(0, MAX_AUDIT_REASON);
}

function safeState(state: LedgerAuditState | null | undefined): string | null {
  if (state === null || state === undefined) return null;
  return JSON.stringify(Object.fromEntries(Object.entries(state).map(([key, value]) => [key, typeof value === 'string' ? redactSecretShapes(value) : value])));
}

function parseState(json: string | null): LedgerAuditState | null {
  return json === null ? null : (JSON.parse(json) as LedgerAuditState);
}

export function auditEventView(row: AuditRow): LedgerAuditEvent {
  return {
    audit_id: row.audit_id.toString(),
    at: new Date(Number(row.at)).toISOString(),
    actor_kind: row.actor_kind,
    actor_credential_id: row.actor_credential_id,
    // The actor credential's holder (a named approver), looked up when read: a credential's name never changes.
    actor_name: row.actor_name === null ? null : redactSecretShapes(row.actor_name),
    action: row.action,
    agent_id: row.agent_id,
    subject_id: row.subject_id,
    before: parseState(row.before),
    after: parseState(row.after),
    // Redacted when written; again when shown, as every free text the ledger shows.
    reason: row.reason === null ? null : redactSecretShapes(row.reason),
  };
}

export type AuditStore = ReturnType<typeof createAuditStore>;

export function createAuditStore(db: Database.Database) {
  const statements = {
    insert: db.prepare(
      `INSERT INTO audit_events (at, actor_credential_id, actor_kind, action, agent_id, subject_id, before, after, reason)
       VALUES (@at, @actor_credential_id, @actor_kind, @action, @agent_id, @subject_id, @before, @after, @reason)`,
    ),
    // One more than asked: whether another page follows.
    page: db.prepare(
      `SELECT audit_events.*, credentials.holder_name AS actor_name FROM audit_events
       LEFT JOIN credentials ON credentials.credential_id = audit_events.actor_credential_id
       WHERE audit_id > @after AND at >= @since AND (@agent_id IS NULL OR audit_events.agent_id = @agent_id)
       ORDER BY audit_id LIMIT @limit`,
    ),
  };

  function record(entry: AuditEntry): void {
    // Outside a transaction the event would commit apart from its change: a crash between the two loses one.
    if (!db.inTransaction) throw new BugError(`audit event ${entry.action} recorded outside the transaction of its change`);
    statements.insert.run({
      at: entry.at,
      actor_credential_id: entry.actor.credential_id,
      actor_kind: entry.actor.kind,
      action: entry.action,
      agent_id: entry.agentId,
      subject_id: entry.subjectId,
      before: safeState(entry.before),
      after: safeState(entry.after),
      reason: entry.reason === null || entry.reason === undefined ? null : safeReason(entry.reason),
    });
  }

  return {
    record,

    /** A credential registered, revoked or rotated (see the module comment); inside the transaction that changes it. */
    credentialChanged(change: {
      readonly action: 'credential_registered' | 'credential_revoked' | 'credential_rotated';
      readonly actor: AuditActor;
      readonly credential: AuditedCredential;
      readonly at: number;
      readonly before?: LedgerAuditState | null;
      readonly after?: LedgerAuditState | null;
      readonly reason?: string | null;
    }): void {
      const { credential } = change;
      record({
        actor: change.actor,
        action: change.action,
        agentId: credential.agent_id,
        subjectId: credential.credential_id,
        before: change.before ?? null,
        after: { kind: credential.kind, ...change.after },
        reason: change.reason ?? null,
        at: change.at,
      });
    },

    /** One page of events, oldest first; `next_after` continues it (null: no more for now). */
    page(query: AuditQuery): LedgerAuditPage {
      const rows = statements.page.all({ after: query.after ?? 0n, since: query.since ?? 0, agent_id: query.agentId, limit: query.limit + 1 }) as AuditRow[];
      const events = rows.slice(0, query.limit).map(auditEventView);
      return { events, next_after: rows.length > query.limit ? (events.at(-1)?.audit_id ?? null) : null };
    },
  };
}
