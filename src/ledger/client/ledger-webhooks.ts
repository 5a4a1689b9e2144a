import { isAbsolute } from 'node:path';
import { UsageError, UserError } from '../../errors.js';
import { LEDGER_EVENT_TYPES, type LedgerEventType } from '../events/ledger-event-types.js';
import { readWebhookSecretFile, SECRET_FILE_PROBLEMS } from '../webhooks/webhook-secret-file.js';
import { isAcceptableWebhookUrl } from '../webhooks/webhook-url.js';
import type { LedgerWebhookDelivery, LedgerWebhookRemoval, LedgerWebhookSink } from '../wire/answers.js';
import type { LedgerConnector } from './ledger-connector.js';

/*
 * `lexec ledger webhooks …` (docs/ledger-cli.md): thin verbs over the ledger's webhook routes.
 * `add` checks what it can before it asks: the URL's scheme and host, the event types, and the
 * secret file as the ledger will (absolute, a regular 0600 file of this user, 32 bytes or more).
 * No result, message or error holds the secret or the URL's path.
 */

export interface WebhookAddRequest {
  readonly target: LedgerConnector;
  readonly url: string;
  readonly secretFile: string;
  readonly events: string | null;
  readonly format: 'lexec' | 'slack';
  readonly fromEventId: bigint | null;
}

/** `webhooks add`: the sink as the ledger answers it (its URL redacted to the origin). */
export interface WebhookAddResult {
  readonly sink: LedgerWebhookSink;
}
export interface WebhookListResult {
  readonly sinks: LedgerWebhookSink[];
}
export type WebhookRemoveResult = LedgerWebhookRemoval;
export interface WebhookDeliveriesResult {
  readonly deliveries: LedgerWebhookDelivery[];
  /** The `--before` of the next, older page; null: this was the last (or the ledger does not page). */
  readonly next_before: string | null;
}

const HELP = 'Run the command with --help to see its flags.';

function eventTypes(list: string): LedgerEventType[] {
  const names = list.split(',').map((name) => name.trim());
  const known = new Set<string>(LEDGER_EVENT_TYPES);
  const unknown = names.findIndex((name) => !known.has(name));
  if (unknown !== -1) {
    throw new UsageError('invalid_flag_value', `--events must be a comma-separated list of event types: ${LEDGER_EVENT_TYPES.join(', ')}.`, {
      nextStep: HELP,
      issues: [{ path: `events[${String(unknown)}]`, message: 'must be an event type' }],
    });
  }
  return names as LedgerEventType[];
}

export async function addLedgerWebhook(request: WebhookAddRequest): Promise<WebhookAddResult> {
  if (!isAcceptableWebhookUrl(request.url)) {
    throw new UsageError('invalid_flag_value', '--webhook-url must be an https:// URL, or http:// to a loopback host (127.0.0.0/8, ::1, localhost), without user, password or fragment.', {
      nextStep: 'Events never cross a network in clear: use the receiver\'s https:// URL.',
      issues: [{ path: 'url', message: 'must be https, or http to a loopback host' }],
    });
  }
  if (!isAbsolute(request.secretFile)) {
    throw new UsageError('invalid_flag_value', '--secret-file must be an absolute path.', { nextStep: HELP, issues: [{ path: 'secret_file', message: 'must be an absolute path' }] });
  }
  const events = request.events === null ? null : eventTypes(request.events);
  // The same check as the ledger's (it usually runs as this user): say so before anything is sent.
  const secret = await readWebhookSecretFile(request.secretFile);
  if (!secret.ok) {
    throw new UserError('webhook_secret_file_refused', `The secret file ${request.secretFile} ${SECRET_FILE_PROBLEMS[secret.problem]}.`, {
      nextStep: 'Write at least 32 random bytes to it as the ledger\'s user and make it private, for example: openssl rand -hex 32 > FILE && chmod 600 FILE.',
      issues: [{ path: 'secret_file', message: secret.problem }],
    });
  }
  const client = await request.target('admin');
  return { sink: await client.addWebhook({ url: request.url, secretFile: request.secretFile, events, format: request.format, fromEventId: request.fromEventId }) };
}

export async function listLedgerWebhooks(request: { target: LedgerConnector; all: boolean }): Promise<WebhookListResult> {
  const client = await request.target('admin');
  return { sinks: await client.listWebhooks(request.all) };
}

export async function removeLedgerWebhook(request: { target: LedgerConnector; sinkId: string }): Promise<WebhookRemoveResult> {
  if (!/^whk_[0-9a-f-]{36}$/.test(request.sinkId)) {
    throw new UsageError('invalid_argument', 'The sink id must be whk_ followed by a UUID, as `lexec ledger webhooks list` shows it.', { nextStep: HELP });
  }
  const client = await request.target('admin');
  return client.removeWebhook(request.sinkId);
}

export async function listLedgerWebhookDeliveries(request: {
  target: LedgerConnector;
  failed: boolean;
  sinkId: string | null;
  limit: number | null;
  before: bigint | null;
  eventId?: bigint | null;
}): Promise<WebhookDeliveriesResult> {
  if (request.sinkId !== null && !/^whk_[0-9a-f-]{36}$/.test(request.sinkId)) {
    throw new UsageError('invalid_flag_value', '--sink must be a webhook sink id (whk_ followed by a UUID).', { nextStep: HELP });
  }
  const client = await request.target('admin');
  return client.webhookDeliveries({ failed: request.failed, sinkId: request.sinkId ?? undefined, limit: request.limit ?? undefined, before: request.before ?? undefined, eventId: request.eventId ?? undefined });
}
