import { z } from 'zod';
import { amount, scale, timestamp } from './answer-parts.js';

/*
 * What the ledger answers about where money went and who was told (issue 28): spend reports
 * (`GET /reports/spend`), the events outbox (`GET /events`) and webhook sinks and their deliveries
 * (`/webhooks`). Re-exported by answers.ts, the one place clients import answers from.
 */

const spendTally = {
  settled_units: amount,
  settled_count: z.int().min(0),
  held_units: amount,
  held_count: z.int().min(0),
};

/**
 * `GET /reports/spend` (docs/ledger.md "Spend reports"): settled amounts per group from the
 * settlement rows settled in [since, until), and apart the amounts held now by authorizations
 * requested in that range. `group` is an agent id, a target id (`(none)` for none), or a
 * calendar period in `time_zone` (`2026-11-27`, a week's Monday `2026-11-23`, `2026-11`);
 * `label` is what a person reads (an agent's name; the group itself otherwise). With `split`
 * (`agent` or `target`) each group also has `parts`, its amounts per agent or target.
 */
export const spendReportSchema = z.object({
  by: z.enum(['agent', 'target', 'day', 'week', 'month']),
  time_zone: z.string(),
  since: timestamp.nullable(),
  until: timestamp.nullable(),
  as_of: timestamp,
  units_scale: scale,
  currency: z.string(),
  groups: z.array(
    z.object({
      group: z.string(),
      label: z.string(),
      ...spendTally,
      /** Asked with `split`: the group's amounts per agent or target; absent otherwise. */
      parts: z.array(z.object({ part: z.string(), label: z.string(), ...spendTally })).optional(),
    }),
  ),
  total: z.object(spendTally),
});
export type LedgerSpendReport = z.output<typeof spendReportSchema>;
export const spendReportAnswerSchema = z.object({ report: spendReportSchema });

/**
 * One ledger event (`GET /events`; docs/ledger.md "Events"): an increasing id (a decimal digit
 * string), its time and type, the agent (id and name), target and authorization it concerns, the
 * amount as a digit string, and ledger-made details. `type` is any string: a newer ledger may
 * record more kinds.
 */
export const ledgerEventSchema = z.object({
  event_id: z.string().regex(/^\d{1,19}$/, 'must be a decimal digit string'),
  type: z.string(),
  at: timestamp,
  agent_id: z.string().nullable(),
  agent_name: z.string().nullable(),
  target_id: z.string().nullable(),
  authorization_id: z.string().nullable(),
  amount_units: amount.nullable(),
  units_scale: scale,
  currency: z.string(),
  details: z.record(z.string(), z.union([z.string(), z.number(), z.boolean(), z.null()])),
});
export type LedgerEvent = z.output<typeof ledgerEventSchema>;
/** `GET /events`: events after the cursor, oldest first; `next_after` is the cursor to continue from, `more` whether more wait already. */
export const eventsAnswerSchema = z.object({ events: z.array(ledgerEventSchema), next_after: z.string().regex(/^\d{1,19}$/), more: z.boolean() });
export type LedgerEventPage = z.output<typeof eventsAnswerSchema>;

/**
 * A webhook sink (`GET /webhooks`; docs/ledger.md "Webhooks"): its URL redacted to the origin
 * (`https://hooks.slack.com/…`: the path may be the credential), its format, the event types it
 * takes (null: all), the secret file's path (never its content), its cursor and its deliveries
 * by status.
 */
export const webhookSinkSchema = z.object({
  sink_id: z.string(),
  url: z.string(),
  format: z.enum(['lexec', 'slack']),
  events: z.array(z.string()).nullable(),
  secret_file: z.string(),
  created_at: timestamp,
  removed_at: timestamp.nullable(),
  cursor_event_id: z.string().regex(/^\d{1,19}$/),
  deliveries: z.object({ delivered: z.number().int(), failed: z.number().int(), pending: z.number().int() }),
});
export type LedgerWebhookSink = z.output<typeof webhookSinkSchema>;
export const webhookSinkAnswerSchema = z.object({ sink: webhookSinkSchema });
export const webhookSinksAnswerSchema = z.object({ sinks: z.array(webhookSinkSchema) });
/** `POST /webhooks/{id}/remove`: the sink, and whether this call removed it (false: it already was). */
export const webhookRemovalAnswerSchema = z.object({ sink: webhookSinkSchema, changed: z.boolean() });
export type LedgerWebhookRemoval = z.output<typeof webhookRemovalAnswerSchema>;

/** One delivery of an event to a sink: how its last attempt went (a status code, an error class; never a body or a URL). */
export const webhookDeliverySchema = z.object({
  /** Its place in the ledger's deliveries: `before` pages past it (optional: a ledger before paging did not send it). */
  delivery_id: z.string().regex(/^\d{1,19}$/).optional(),
  sink_id: z.string(),
  event_id: z.string().regex(/^\d{1,19}$/),
  event_type: z.string(),
  status: z.enum(['pending', 'delivered', 'failed']),
  attempts: z.number().int(),
  created_at: timestamp,
  next_attempt_at: timestamp.nullable(),
  last_attempt_at: timestamp.nullable(),
  last_http_status: z.number().int().nullable(),
  last_error: z.string().nullable(),
  delivered_at: timestamp.nullable(),
});
export type LedgerWebhookDelivery = z.output<typeof webhookDeliverySchema>;
/** `GET /webhooks/deliveries`: one page, newest first; `next_before` continues it with older ones (null: the last page; absent from a ledger before paging). */
export const webhookDeliveriesAnswerSchema = z.object({ deliveries: z.array(webhookDeliverySchema), next_before: z.string().regex(/^\d{1,19}$/).nullable().optional() });
