import {
  eventsAnswerSchema,
  spendReportAnswerSchema,
  webhookDeliveriesAnswerSchema,
  webhookRemovalAnswerSchema,
  webhookSinkAnswerSchema,
  webhookSinksAnswerSchema,
  type LedgerEventPage,
  type LedgerSpendReport,
  type LedgerWebhookDelivery,
  type LedgerWebhookRemoval,
  type LedgerWebhookSink,
} from '../wire/answers.js';
import { queryString, type Send, type SpendReportRequest } from './ledger-call.js';

const id = encodeURIComponent;

/** The ledger client's calls for spend reports, the events outbox and webhook sinks (issue 28), over its `send`. */
export function alertsAndReportsCalls(send: Send) {
  return {
    /** Settled and held spend per agent, target or calendar period (admin or approver): `GET /reports/spend`. */
    async spendReport(query: SpendReportRequest): Promise<LedgerSpendReport> {
      const search = queryString({ by: query.by, since: query.since, until: query.until, split: query.split });
      return (await send({ method: 'GET', path: `/reports/spend${search}`, needs: ['admin', 'approver'], subject: 'authorization', schema: spendReportAnswerSchema })).report;
    },

    /**
     * One page of ledger events after a cursor, oldest first (admin or approver): `GET /events`.
     * With `waitSeconds` (1-30) a long-poll: answered as soon as an event follows the cursor, or
     * empty once that long has passed; `signal` gives up on it.
     */
    async events(
      filter: {
        after?: bigint | undefined;
        agentId?: string | undefined;
        types?: readonly string[] | undefined;
        limit?: number | undefined;
        waitSeconds?: number | undefined;
        signal?: AbortSignal | undefined;
      } = {},
    ): Promise<LedgerEventPage> {
      const search = queryString({ after: filter.after?.toString(), agent_id: filter.agentId, types: filter.types?.join(','), limit: filter.limit, wait_seconds: filter.waitSeconds });
      const waiting = (filter.waitSeconds ?? 0) * 1000;
      return send({ method: 'GET', path: `/events${search}`, needs: ['admin', 'approver'], subject: 'agent', schema: eventsAnswerSchema, extraTimeoutMs: waiting, signal: filter.signal });
    },

    /** Adds a webhook sink (admin): `POST /webhooks`. The URL is sent once and answered redacted. */
    async addWebhook(request: { url: string; secretFile: string; events: readonly string[] | null; format: 'lexec' | 'slack'; fromEventId: bigint | null }): Promise<LedgerWebhookSink> {
      const body = {
        url: request.url,
        secret_file: request.secretFile,
        format: request.format,
        ...(request.events === null ? {} : { events: request.events }),
        ...(request.fromEventId === null ? {} : { from_event_id: request.fromEventId.toString() }),
      };
      return (await send({ method: 'POST', path: '/webhooks', body, needs: ['admin'], subject: 'webhook', schema: webhookSinkAnswerSchema })).sink;
    },

    /** The webhook sinks (admin), live ones or all: `GET /webhooks`. */
    async listWebhooks(all = false): Promise<LedgerWebhookSink[]> {
      const path = `/webhooks${queryString({ all: all ? 'true' : undefined })}`;
      return (await send({ method: 'GET', path, needs: ['admin'], subject: 'webhook', schema: webhookSinksAnswerSchema })).sinks;
    },

    /** Removes a webhook sink (admin); repeating it changes nothing (`changed: false`). */
    async removeWebhook(sinkId: string): Promise<LedgerWebhookRemoval> {
      return send({ method: 'POST', path: `/webhooks/${id(sinkId)}/remove`, body: {}, needs: ['admin'], subject: 'webhook', schema: webhookRemovalAnswerSchema });
    },

    /** Webhook deliveries newest first (admin): `GET /webhooks/deliveries`. */
    async webhookDeliveries(
      filter: { failed?: boolean; sinkId?: string | undefined; limit?: number | undefined; before?: bigint | undefined; eventId?: bigint | undefined } = {},
    ): Promise<{ deliveries: LedgerWebhookDelivery[]; next_before: string | null }> {
      const path = `/webhooks/deliveries${queryString({ failed: filter.failed === true ? 'true' : undefined, sink_id: filter.sinkId, limit: filter.limit, before: filter.before?.toString(), event_id: filter.eventId?.toString() })}`;
      const page = await send({ method: 'GET', path, needs: ['admin'], subject: 'webhook', schema: webhookDeliveriesAnswerSchema });
      return { deliveries: page.deliveries, next_before: page.next_before ?? null };
    },
  };
}
