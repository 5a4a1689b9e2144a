import { ApiError } from '../../http/api-error.js';
import type { LedgerEventType } from '../events/ledger-event-types.js';
import type { CredentialActor } from '../store/audit-store.js';
import type { WebhookStore } from '../store/webhook-store.js';
import type { LedgerWebhookDelivery, LedgerWebhookRemoval, LedgerWebhookSink } from '../wire/answers.js';
import { readWebhookSecretFile } from './webhook-secret-file.js';

/*
 * The operator's webhook sinks (docs/ledger.md "Webhooks"), behind `POST /webhooks`,
 * `GET /webhooks`, `POST /webhooks/{id}/remove` and `GET /webhooks/deliveries` (admin). Adding
 * and removing are audited as the acting credential's (the store records it with the change).
 */

export interface WebhookSinkRequest {
  readonly url: string;
  readonly secretFile: string;
  readonly events: readonly LedgerEventType[] | null;
  readonly format: 'lexec' | 'slack';
  readonly fromEventId: bigint | null;
}

export type WebhookSinks = ReturnType<typeof createWebhookSinks>;

export function createWebhookSinks(store: WebhookStore, wake: () => void) {
  return {
    /** Adds a sink once its secret file passes (400 with the field `secret_file` and a reason code otherwise; never its content). */
    async add(request: WebhookSinkRequest, actor: CredentialActor): Promise<LedgerWebhookSink> {
      const secret = await readWebhookSecretFile(request.secretFile);
      if (!secret.ok) throw new ApiError(400, 'invalid_request', { reasonCode: secret.problem, fields: ['secret_file'] });
      const sink = store.add({ url: request.url, format: request.format, eventTypes: request.events, secretPath: request.secretFile, fromEventId: request.fromEventId }, actor);
      // A sink from an earlier event has deliveries to take up now.
      wake();
      return sink;
    },

    list: (all: boolean): LedgerWebhookSink[] => store.list(all),

    remove(sinkId: string, actor: CredentialActor): LedgerWebhookRemoval {
      const changed = store.remove(sinkId, actor);
      const sink = store.show(sinkId);
      if (sink === null) throw new ApiError(404, 'not_found');
      return { sink, changed };
    },

    /** One page of deliveries, newest first; a full page may have older ones after it: `next_before` (its last id) continues it. */
    deliveries(filter: { sinkId: string | null; failed: boolean; limit: number; before: bigint | null; eventId: bigint | null }): { deliveries: LedgerWebhookDelivery[]; next_before: string | null } {
      const deliveries = store.deliveries(filter);
      return { deliveries, next_before: deliveries.length === filter.limit ? (deliveries.at(-1)?.delivery_id ?? null) : null };
    },

    /** Deliveries by sink and status (delivered, failed, pending), for the metrics. */
    deliveryCounts: () => store.counts(),
  };
}
