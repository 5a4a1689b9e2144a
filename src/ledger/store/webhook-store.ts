import type Database from 'better-sqlite3';
import { randomUUID } from 'node:crypto';
import type { LedgerEventType } from '../events/ledger-event-types.js';
import type { LedgerWebhookDelivery, LedgerWebhookSink } from '../wire/answers.js';
import { eventView } from './event-store.js';
import type { LedgerEvent } from '../wire/answers.js';
import { createAuditStore, type CredentialActor } from './audit-store.js';
import { immediateTransaction, type Immediate } from './immediate-transaction.js';
import { deliveryView, DELIVERIES_OF_EVENT_SQL, DELIVERY_COUNTS_SQL, PRUNE_SQL, sinkView, urlOrigin, type DeliveryRow, type SinkRow, type WebhookDeliveryCounts, type WebhookFormat } from './webhook-rows.js';

export type { WebhookDeliveryCounts, WebhookFormat } from './webhook-rows.js';

/*
 * Webhook sinks and their deliveries (ledger migration 12; docs/ledger.md "Webhooks").
 *
 * A sink's cursor is the last event it has taken up. `takeUp` moves every live sink's cursor
 * over the events written since, inserting one pending delivery per event the sink wants, in one
 * IMMEDIATE transaction: a crash keeps both or neither, so no event is skipped and none is taken
 * twice (UNIQUE (sink_id, event_id) besides). A delivery is pending until `delivered` (after a 2xx)
 * or `failed` (retries ended); `retry` records an attempt that did not succeed and when to try again.
 *
 * Adding and removing a sink are operator actions: each records its audit event (`webhook_added`,
 * `webhook_removed`; docs/ledger.md "Audit trail") in the IMMEDIATE transaction of the change, at
 * the change's own time. The event keeps the URL's origin only — its path may be a secret — and
 * the secret file's path, never its content (the store never reads it).
 */

export interface NewWebhookSink {
  readonly url: string;
  readonly format: WebhookFormat;
  readonly eventTypes: readonly LedgerEventType[] | null;
  readonly secretPath: string;
  /** Deliver events from this id on; null: only events written after now. */
  readonly fromEventId: bigint | null;
}

/** A live sink as the delivery worker uses it (the URL in full: never shown, never logged). */
export interface WebhookSinkTarget {
  readonly sinkId: string;
  readonly url: string;
  readonly format: WebhookFormat;
  readonly secretPath: string;
}

export interface DueDelivery {
  readonly deliveryId: bigint;
  readonly sinkId: string;
  readonly eventId: bigint;
  readonly attempts: number;
  /** The event delivered, as GET /events shows it. */
  readonly event: LedgerEvent;
}

type DeliveryStatus = 'pending' | 'delivered' | 'failed';
/** What the kept counts tally per sink: the statuses, and `pruned` — delivered rows the retention removed (still counted as delivered). */
type CountedStatus = DeliveryStatus | 'pruned';

/** How many events one `takeUp` reads at most (the worker calls again while more wait). */
const TAKE_UP_BATCH = 500;

export type WebhookStore = ReturnType<typeof createWebhookStore>;

export interface WebhookStoreOptions {
  /**
   * How `transaction` (the delivery worker's turn) takes the write lock: by default as every other
   * change does; the delivery thread polls for it (storage/shared-write-lock.ts), so a busy
   * request thread cannot starve it.
   */
  readonly turnTransaction?: Immediate;
}

export function createWebhookStore(db: Database.Database, now: () => number, options: WebhookStoreOptions = {}) {
  const immediate = immediateTransaction(db);
  const turnTransaction = options.turnTransaction ?? immediate;
  const audit = createAuditStore(db);
  const statements = {
    insertSink: db.prepare(
      `INSERT INTO webhook_sinks (sink_id, url, format, event_types, secret_path, created_at, removed_at, cursor_event_id)
       VALUES (@sink_id, @url, @format, @event_types, @secret_path, @created_at, NULL, @cursor_event_id)`,
    ),
    lastEventId: db.prepare('SELECT COALESCE(MAX(event_id), 0) AS last FROM events'),
    sink: db.prepare('SELECT * FROM webhook_sinks WHERE sink_id = ?'),
    sinks: db.prepare('SELECT * FROM webhook_sinks WHERE removed_at IS NULL OR @all = 1 ORDER BY created_at, sink_id'),
    liveBehind: db.prepare('SELECT * FROM webhook_sinks WHERE removed_at IS NULL AND cursor_event_id < ?'),
    eventsAfter: db.prepare('SELECT event_id, type FROM events WHERE event_id > ? ORDER BY event_id LIMIT ?'),
    insertDelivery: db.prepare(
      `INSERT OR IGNORE INTO webhook_deliveries (sink_id, event_id, status, attempts, created_at, next_attempt_at)
       VALUES (?, ?, 'pending', 0, ?, ?)`,
    ),
    moveCursor: db.prepare('UPDATE webhook_sinks SET cursor_event_id = ? WHERE sink_id = ? AND cursor_event_id < ?'),
    remove: db.prepare('UPDATE webhook_sinks SET removed_at = ? WHERE sink_id = ? AND removed_at IS NULL'),
    abandon: db.prepare(
      `UPDATE webhook_deliveries SET status = 'failed', next_attempt_at = NULL, last_error = 'sink_removed' WHERE sink_id = ? AND status = 'pending'`,
    ),
    // With each delivery its event (as GET /events shows it): one statement per sink and turn.
    due: db.prepare(
      `SELECT d.delivery_id, d.sink_id, d.attempts, e.*, agents.name AS agent_name
       FROM webhook_deliveries d JOIN events e ON e.event_id = d.event_id LEFT JOIN agents ON agents.agent_id = e.agent_id
       WHERE d.sink_id = ? AND d.status = 'pending' AND d.next_attempt_at <= ? ORDER BY d.next_attempt_at, d.event_id LIMIT ?`,
    ),
    delivered: db.prepare(
      `UPDATE webhook_deliveries SET status = 'delivered', attempts = attempts + 1, last_attempt_at = @at, last_http_status = @http_status,
         last_error = NULL, delivered_at = @at, next_attempt_at = NULL
       WHERE delivery_id = @delivery_id AND sink_id = @sink_id AND status = 'pending'`,
    ),
    retry: db.prepare(
      `UPDATE webhook_deliveries SET attempts = attempts + 1, last_attempt_at = @at, last_http_status = @http_status, last_error = @error,
         status = CASE WHEN @next IS NULL THEN 'failed' ELSE 'pending' END, next_attempt_at = @next
       WHERE delivery_id = @delivery_id AND sink_id = @sink_id AND status = 'pending'`,
    ),
    agedDelivered: db.prepare(PRUNE_SQL.aged),
    anyDeliveredBefore: db.prepare(PRUNE_SQL.any),
    removeDelivered: db.prepare("DELETE FROM webhook_deliveries WHERE delivery_id = ? AND status = 'delivered'"),
    addCount: db.prepare(
      `INSERT INTO webhook_delivery_counts (sink_id, status, count) VALUES (?, ?, ?)
       ON CONFLICT (sink_id, status) DO UPDATE SET count = count + excluded.count`,
    ),
    event: db.prepare('SELECT events.*, agents.name AS agent_name FROM events LEFT JOIN agents ON agents.agent_id = events.agent_id WHERE event_id = ?'),
    deliveries: db.prepare(
      `SELECT d.*, e.type AS event_type FROM webhook_deliveries d JOIN events e ON e.event_id = d.event_id
       WHERE (@sink_id IS NULL OR d.sink_id = @sink_id) AND (@status IS NULL OR d.status = @status)
         AND d.delivery_id < COALESCE(@before, 9223372036854775807)
       ORDER BY d.delivery_id DESC LIMIT @limit`,
    ),
    deliveriesOfEvent: db.prepare(DELIVERIES_OF_EVENT_SQL),
    counts: db.prepare(DELIVERY_COUNTS_SQL),
  };

  function counts(): WebhookDeliveryCounts[] {
    const rows = statements.counts.all() as { sink_id: string; delivered: bigint; failed: bigint; pending: bigint }[];
    return rows.map((row) => ({ sink_id: row.sink_id, delivered: Number(row.delivered), failed: Number(row.failed), pending: Number(row.pending) }));
  }

  const tallies = () => new Map(counts().map((count) => [count.sink_id, count]));

  // The deliveries by sink and status (ledger migration 18), kept in the transaction of each
  // change: a change adds to `tally`, and the store's outermost transaction writes it once before
  // its commit — one statement per sink and status a turn touched, not one per delivery (a turn
  // takes up and records dozens). Every write to webhook_deliveries is in this file.
  const tally = new Map<string, { readonly sinkId: string; readonly status: CountedStatus; delta: number }>();
  let depth = 0;
  function count(sinkId: string, status: CountedStatus, delta: number): void {
    const key = `${sinkId} ${status}`;
    const known = tally.get(key);
    if (known === undefined) tally.set(key, { sinkId, status, delta });
    else known.delta += delta;
  }
  /** Runs `change` in a transaction of `run` (or in the store's transaction already open) and writes what it tallied before the commit. */
  function counting<T>(run: Immediate | null, change: () => T): T {
    if (depth > 0 && run === null) return change();
    return (run ?? immediate)(() => {
      depth += 1;
      try {
        const result = change();
        if (depth === 1) {
          for (const { sinkId, status, delta } of tally.values()) if (delta !== 0) statements.addCount.run(sinkId, status, delta);
          tally.clear();
        }
        return result;
      } catch (error) {
        // Rolled back: nothing it tallied happened.
        if (depth === 1) tally.clear();
        throw error;
      } finally {
        depth -= 1;
      }
    });
  }

  return {
    /** Runs `fn` in one IMMEDIATE transaction (the worker records a turn's outcomes and take-up together: one commit). */
    transaction: <T>(fn: () => T): T => counting(turnTransaction, fn),

    /** Adds a sink starting after the latest event (or just before `fromEventId`), audited as `actor`'s `webhook_added`. */
    add(sink: NewWebhookSink, actor: CredentialActor): LedgerWebhookSink {
      const sinkId = `whk_${randomUUID()}`;
      immediate(() => {
        const at = now();
        const last = (statements.lastEventId.get() as { last: bigint }).last;
        const wanted = sink.fromEventId === null ? last : sink.fromEventId - 1n < last ? sink.fromEventId - 1n : last;
        const cursor = wanted < 0n ? 0n : wanted;
        const eventTypes = sink.eventTypes === null ? null : JSON.stringify(sink.eventTypes);
        statements.insertSink.run({
          sink_id: sinkId,
          url: sink.url,
          format: sink.format,
          event_types: eventTypes,
          secret_path: sink.secretPath,
          created_at: at,
          cursor_event_id: cursor,
        });
        audit.record({
          actor,
          action: 'webhook_added',
          agentId: null,
          subjectId: sinkId,
          after: {
            status: 'active',
            url_origin: urlOrigin(sink.url),
            format: sink.format,
            events: sink.eventTypes === null ? 'all' : sink.eventTypes.join(','),
            secret_file: sink.secretPath,
            cursor_event_id: cursor.toString(),
          },
          at,
        });
      });
      return this.show(sinkId) as LedgerWebhookSink;
    },

    show(sinkId: string): LedgerWebhookSink | null {
      const row = statements.sink.get(sinkId) as SinkRow | undefined;
      return row === undefined ? null : sinkView(row, tallies().get(row.sink_id));
    },

    /** Live sinks, oldest first; with `all`, removed ones too. */
    list(all = false): LedgerWebhookSink[] {
      const tally = tallies();
      return (statements.sinks.all({ all: all ? 1 : 0 }) as SinkRow[]).map((row) => sinkView(row, tally.get(row.sink_id)));
    },

    /**
     * Ends a sink: nothing more is taken up or delivered; its pending deliveries fail
     * (`sink_removed`). Audited as `actor`'s `webhook_removed` with how many deliveries it failed.
     * False, and nothing recorded, when it was already removed (or never was).
     */
    remove(sinkId: string, actor: CredentialActor): boolean {
      return counting(immediate, () => {
        const at = now();
        const changed = statements.remove.run(at, sinkId).changes === 1;
        if (!changed) return false;
        const failed = statements.abandon.run(sinkId).changes;
        count(sinkId, 'pending', -failed);
        count(sinkId, 'failed', failed);
        audit.record({ actor, action: 'webhook_removed', agentId: null, subjectId: sinkId, before: { status: 'active' }, after: { status: 'removed', failed_deliveries: failed }, at });
        return true;
      });
    },

    /** Live sinks whose delivery the worker runs (the full URL: only for the POST itself). */
    targets(): WebhookSinkTarget[] {
      return (statements.sinks.all({ all: 0 }) as SinkRow[]).map((row) => ({ sinkId: row.sink_id, url: row.url, format: row.format, secretPath: row.secret_path }));
    },

    /** Whether a live sink has events after its cursor to take up (a read: no write lock taken). */
    behind(): boolean {
      const last = (statements.lastEventId.get() as { last: bigint }).last;
      return statements.liveBehind.all(last).length > 0;
    },

    /**
     * Takes up the events written since each live sink's cursor into pending deliveries, cursor
     * and rows in one transaction. Answers whether more events wait (call again).
     */
    takeUp(): boolean {
      const last = (statements.lastEventId.get() as { last: bigint }).last;
      const behind = statements.liveBehind.all(last) as SinkRow[];
      if (behind.length === 0) return false;
      let more = false;
      counting(immediate, () => {
        const at = now();
        for (const sink of behind) {
          const wanted = sink.event_types === null ? null : new Set(JSON.parse(sink.event_types) as string[]);
          const events = statements.eventsAfter.all(sink.cursor_event_id, TAKE_UP_BATCH) as { event_id: bigint; type: string }[];
          let taken = 0;
          for (const event of events) if (wanted === null || wanted.has(event.type)) taken += statements.insertDelivery.run(sink.sink_id, event.event_id, at, at).changes;
          count(sink.sink_id, 'pending', taken);
          const reached = events.at(-1)?.event_id;
          if (reached !== undefined) statements.moveCursor.run(reached, sink.sink_id, reached);
          if (events.length === TAKE_UP_BATCH) more = true;
        }
      });
      return more;
    },

    /** Up to `limit` pending deliveries of a sink whose next attempt is due, the earliest first. */
    due(sinkId: string, limit: number): DueDelivery[] {
      const rows = statements.due.all(sinkId, now(), limit) as (Parameters<typeof eventView>[0] & { delivery_id: bigint; sink_id: string; attempts: bigint })[];
      return rows.map((row) => ({ deliveryId: row.delivery_id, sinkId: row.sink_id, eventId: row.event_id, attempts: Number(row.attempts), event: eventView(row) }));
    },

    /** The event as `GET /events` shows it. */
    event(eventId: bigint): LedgerEvent | null {
      const row = statements.event.get(eventId) as Parameters<typeof eventView>[0] | undefined;
      return row === undefined ? null : eventView(row);
    },

    /** Records a 2xx for `delivery` (still pending: a delivery already recorded is left as it is; so is one not of `sinkId`). */
    delivered(delivery: Pick<DueDelivery, 'deliveryId' | 'sinkId'>, httpStatus: number): void {
      counting(null, () => {
        if (statements.delivered.run({ delivery_id: delivery.deliveryId, sink_id: delivery.sinkId, at: now(), http_status: httpStatus }).changes !== 1) return;
        count(delivery.sinkId, 'pending', -1);
        count(delivery.sinkId, 'delivered', 1);
      });
    },

    /** Whether a delivered delivery was delivered before `before` (ms): a read, no write lock taken. */
    anyDeliveredBefore(before: number): boolean {
      return statements.anyDeliveredBefore.get(before) !== undefined;
    },

    /**
     * Removes up to `limit` delivered deliveries delivered before `before` (ms), the oldest first,
     * and answers how many it removed (`limit`: call again). Pending and failed ones are never
     * removed. Each sink's delivered count stays as it was; what was removed is tallied as
     * `pruned` beside it (the invariant checker: delivered = the rows delivered + pruned).
     */
    pruneDelivered(before: number, limit: number): number {
      return counting(null, () => {
        const aged = statements.agedDelivered.all(before, limit) as { delivery_id: bigint; sink_id: string }[];
        let removed = 0;
        for (const row of aged) {
          if (statements.removeDelivered.run(row.delivery_id).changes !== 1) continue;
          count(row.sink_id, 'pruned', 1);
          removed += 1;
        }
        return removed;
      });
    },

    /** Records an attempt of `delivery` that failed; `next` null: no more attempts (failed). */
    retry(delivery: Pick<DueDelivery, 'deliveryId' | 'sinkId'>, outcome: { httpStatus: number | null; error: string }, next: number | null): void {
      counting(null, () => {
        const changes = statements.retry.run({ delivery_id: delivery.deliveryId, sink_id: delivery.sinkId, at: now(), http_status: outcome.httpStatus, error: outcome.error, next }).changes;
        if (changes !== 1 || next !== null) return;
        count(delivery.sinkId, 'pending', -1);
        count(delivery.sinkId, 'failed', 1);
      });
    },

    /** Deliveries newest first: of one sink or all, of one event or all, only failed ones or all, older than `before` (a delivery id) when given. */
    deliveries(filter: { sinkId: string | null; failed: boolean; limit: number; before?: bigint | null; eventId?: bigint | null }): LedgerWebhookDelivery[] {
      const parameters = { sink_id: filter.sinkId, status: filter.failed ? 'failed' : null, limit: filter.limit, before: filter.before ?? null };
      const eventId = filter.eventId ?? null;
      const rows = (eventId === null ? statements.deliveries.all(parameters) : statements.deliveriesOfEvent.all({ ...parameters, event_id: eventId })) as DeliveryRow[];
      return rows.map(deliveryView);
    },

    /** Deliveries by sink and status (every sink, removed ones too): for the metrics (issue 28 item 6). */
    counts,
  };
}
