import type Database from 'better-sqlite3';
import { redactSecretShapes } from '../../domain/secret-text.js';
import { UNITS_SCALE } from '../../domain/money.js';
import { BugError } from '../../errors.js';
import type { LedgerEventDetails, LedgerEventType } from '../events/ledger-event-types.js';
import type { LedgerEvent, LedgerEventPage } from '../wire/answers.js';

/*
 * The events outbox (ledger migration 10, `events`; docs/ledger.md "Events").
 *
 * Writing. `append(entry)` adds one event and must be called INSIDE the IMMEDIATE transaction of
 * the change it records (the ledger store's `immediate`, `commitThenReach`), once the change is
 * made: it commits with the change or not at all. Called outside a transaction it throws (a bug).
 * An idempotent repeat, or a refused change, appends nothing (except `authorization.refused`,
 * whose refusal is itself what is recorded).
 *
 * Reading. `page` answers events oldest first by `event_id`, which only grows (AUTOINCREMENT, one
 * writer at a time, so in commit order): a reader that continues after the last id it saw never
 * misses one appended meanwhile. Delivery (webhooks, `--follow`) keeps its own cursor.
 */

export interface LedgerEventEntry {
  readonly type: LedgerEventType;
  readonly at: number;
  readonly agentId: string | null;
  readonly targetId?: string | null;
  readonly tokenId?: string | null;
  readonly amountUnits?: bigint | null;
  readonly details?: LedgerEventDetails;
}

export interface LedgerEventQuery {
  /** Only events after this id (0: from the first). */
  readonly after: bigint;
  readonly limit: number;
  readonly agentId?: string | null;
  readonly types?: readonly LedgerEventType[] | null;
}

interface EventRow {
  event_id: bigint;
  at: bigint;
  type: string;
  agent_id: string | null;
  agent_name: string | null;
  target_id: string | null;
  token_id: string | null;
  amount_units: bigint | null;
  details: string;
}

function safeDetails(details: LedgerEventDetails | undefined): string {
  const entries = Object.entries(details ?? {}).map(([key, value]) => [key, typeof value === 'string' ? redactSecretShapes(value) : value]);
  return JSON.stringify(Object.fromEntries(entries));
}

export function eventView(row: EventRow): LedgerEvent {
  return {
    event_id: row.event_id.toString(),
    type: row.type,
    at: new Date(Number(row.at)).toISOString(),
    agent_id: row.agent_id,
    agent_name: row.agent_name,
    target_id: row.target_id,
    authorization_id: row.token_id,
    amount_units: row.amount_units,
    units_scale: UNITS_SCALE,
    currency: 'USD',
    details: JSON.parse(row.details) as LedgerEventDetails,
  };
}

export type EventStore = ReturnType<typeof createEventStore>;

export function createEventStore(db: Database.Database) {
  const statements = {
    insert: db.prepare(
      `INSERT INTO events (at, type, agent_id, target_id, token_id, amount_units, details)
       VALUES (@at, @type, @agent_id, @target_id, @token_id, @amount_units, @details)`,
    ),
    // One more than asked: whether another page follows.
    page: db.prepare(
      `SELECT events.*, agents.name AS agent_name FROM events LEFT JOIN agents ON agents.agent_id = events.agent_id
       WHERE event_id > @after AND (@agent_id IS NULL OR events.agent_id = @agent_id)
         AND (@types IS NULL OR events.type IN (SELECT value FROM json_each(@types)))
       ORDER BY event_id LIMIT @limit`,
    ),
    last: db.prepare('SELECT COALESCE(MAX(event_id), 0) AS last FROM events').safeIntegers(true),
  };

  return {
    append(entry: LedgerEventEntry): void {
      if (!db.inTransaction) throw new BugError(`ledger event ${entry.type} appended outside the transaction of its change`);
      statements.insert.run({
        at: entry.at,
        type: entry.type,
        agent_id: entry.agentId,
        target_id: entry.targetId ?? null,
        token_id: entry.tokenId ?? null,
        amount_units: entry.amountUnits ?? null,
        details: safeDetails(entry.details),
      });
    },

    /** One page of events oldest first; `next_after` is the last id answered (the cursor to continue from, whether or not more wait). */
    page(query: LedgerEventQuery): LedgerEventPage {
      const types = query.types === undefined || query.types === null || query.types.length === 0 ? null : JSON.stringify(query.types);
      const rows = statements.page.all({ after: query.after, agent_id: query.agentId ?? null, types, limit: query.limit + 1 }) as EventRow[];
      const events = rows.slice(0, query.limit).map(eventView);
      return { events, next_after: events.at(-1)?.event_id ?? query.after.toString(), more: rows.length > query.limit };
    },

    /** The id of the latest event (0 when none): where a reader that wants only new events starts. */
    lastId: () => (statements.last.get() as { last: bigint }).last,
  };
}
