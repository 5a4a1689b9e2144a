import type { LedgerWebhookDelivery, LedgerWebhookSink } from '../wire/answers.js';
import { redactedWebhookUrl } from '../webhooks/webhook-url.js';
import { iso } from './ledger-rows.js';

/*
 * Webhook sinks' and deliveries' rows as SQLite returns them (integers as bigint), their views as
 * the API answers them, and the SQL read beside the store (the metrics' counts, the retention).
 */

export type WebhookFormat = 'lexec' | 'slack';

/** Deliveries of one sink by status: what `lexec ledger webhooks list` and the metrics show. */
export interface WebhookDeliveryCounts {
  readonly sink_id: string;
  readonly delivered: number;
  readonly failed: number;
  readonly pending: number;
}

export interface SinkRow {
  sink_id: string;
  url: string;
  format: WebhookFormat;
  event_types: string | null;
  secret_path: string;
  created_at: bigint;
  removed_at: bigint | null;
  cursor_event_id: bigint;
}

export interface DeliveryRow {
  delivery_id: bigint;
  sink_id: string;
  event_id: bigint;
  event_type: string;
  status: 'pending' | 'delivered' | 'failed';
  attempts: bigint;
  created_at: bigint;
  next_attempt_at: bigint | null;
  last_attempt_at: bigint | null;
  last_http_status: bigint | null;
  last_error: string | null;
  delivered_at: bigint | null;
}

/**
 * Deliveries by sink and status, every sink: from the counts this store keeps with the deliveries
 * (ledger migration 18; `counting` below), one row per sink and status, so a scrape or a
 * `webhooks list` never counts the deliveries themselves. `delivered` is every delivery ever
 * delivered, those the retention has removed since included (`pruneDelivered`): a counter only grows.
 */
export const DELIVERY_COUNTS_SQL = `
  SELECT s.sink_id AS sink_id,
    COALESCE(SUM(CASE WHEN c.status = 'delivered' THEN c.count END), 0) AS delivered,
    COALESCE(SUM(CASE WHEN c.status = 'failed' THEN c.count END), 0) AS failed,
    COALESCE(SUM(CASE WHEN c.status = 'pending' THEN c.count END), 0) AS pending
  FROM webhook_sinks s LEFT JOIN webhook_delivery_counts c ON c.sink_id = s.sink_id
  GROUP BY s.sink_id ORDER BY s.created_at, s.sink_id`;

/**
 * Delivered rows past the retention, through ledger migration 19's index (`delivered_at` of
 * delivered rows): whether any, and the oldest, a batch at a time. Named with INDEXED BY: left to
 * itself the planner takes `webhook_deliveries_by_status` (status = ?) and walks every delivered row.
 */
export const PRUNE_SQL = {
  any: `SELECT 1 FROM webhook_deliveries INDEXED BY webhook_deliveries_delivered_at WHERE status = 'delivered' AND delivered_at < ? LIMIT 1`,
  aged: `SELECT delivery_id, sink_id FROM webhook_deliveries INDEXED BY webhook_deliveries_delivered_at
    WHERE status = 'delivered' AND delivered_at < ? ORDER BY delivered_at, delivery_id LIMIT ?`,
} as const;

/** The URL's scheme, host and port: all the audit trail keeps of it. */
export function urlOrigin(url: string): string {
  try {
    return new URL(url).origin;
  } catch {
    return '…';
  }
}

/** A sink as the API answers it: the URL redacted to its origin, with its delivery counts. */
export function sinkView(row: SinkRow, counted: WebhookDeliveryCounts | undefined): LedgerWebhookSink {
  return {
    sink_id: row.sink_id,
    url: redactedWebhookUrl(row.url),
    format: row.format,
    events: row.event_types === null ? null : (JSON.parse(row.event_types) as string[]),
    secret_file: row.secret_path,
    created_at: iso(row.created_at),
    removed_at: iso(row.removed_at),
    cursor_event_id: row.cursor_event_id.toString(),
    deliveries: { delivered: counted?.delivered ?? 0, failed: counted?.failed ?? 0, pending: counted?.pending ?? 0 },
  };
}

/** A delivery as the API answers it. */
export function deliveryView(row: DeliveryRow): LedgerWebhookDelivery {
  return {
    delivery_id: row.delivery_id.toString(),
    sink_id: row.sink_id,
    event_id: row.event_id.toString(),
    event_type: row.event_type,
    status: row.status,
    attempts: Number(row.attempts),
    created_at: iso(row.created_at),
    next_attempt_at: iso(row.next_attempt_at),
    last_attempt_at: iso(row.last_attempt_at),
    last_http_status: row.last_http_status === null ? null : Number(row.last_http_status),
    last_error: row.last_error,
    delivered_at: iso(row.delivered_at),
  };
}

/**
 * One event's deliveries, newest first, with the same filters as the list: each sink's row found
 * through UNIQUE (sink_id, event_id) — one lookup per sink, never a walk of the deliveries.
 */
export const DELIVERIES_OF_EVENT_SQL = `SELECT d.*, e.type AS event_type FROM webhook_deliveries d JOIN events e ON e.event_id = d.event_id
  WHERE d.sink_id IN (SELECT sink_id FROM webhook_sinks) AND d.event_id = @event_id
    AND (@sink_id IS NULL OR d.sink_id = @sink_id) AND (@status IS NULL OR d.status = @status)
    AND d.delivery_id < COALESCE(@before, 9223372036854775807)
  ORDER BY d.delivery_id DESC LIMIT @limit`;
