import { Flags } from '@oclif/core';
import { LexecCommand } from '../../../cli/lexec-command.js';
import { ledgerTarget, ledgerTargetFlags } from '../../../cli/ledger-flags.js';
import { wholeNumberFlag } from '../../../cli/flag-values.js';
import type { Output } from '../../../terminal/output.js';
import { renderWebhookAdded } from '../../../ledger/client/render-ledger.js';
import { addLedgerWebhook, type WebhookAddResult } from '../../../ledger/client/ledger-webhooks.js';

export default class LedgerWebhooksAdd extends LexecCommand<WebhookAddResult> {
  static override summary = "Add a webhook sink: the ledger POSTs its events there, signed with a secret file's content (admin token).";
  static override description =
    'Each event is POSTed with x-lexec-signature: t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>">, retried with exponential backoff for 24 h, at least once (de-duplicate by x-lexec-event-id). The secret file must be absolute, 0600, owned by the ledger\'s user and hold at least 32 bytes; the ledger keeps its path, never its content, and reads it at each delivery. The URL is kept only in the ledger\'s database: it is shown as its origin (its path may be a credential, as a Slack webhook\'s is). A new sink starts after the latest event.';
  static override examples = [
    '<%= config.bin %> <%= command.id %> --webhook-url https://hooks.example.com/lexec --secret-file /var/lib/lexec/webhook.secret',
    '<%= config.bin %> <%= command.id %> --webhook-url https://hooks.slack.com/services/T000/B000/XXXX --secret-file /var/lib/lexec/slack.secret --format slack --events approval.waiting,budget.threshold_crossed --json',
  ];
  static override flags = {
    ...ledgerTargetFlags,
    // Not --url: that names the ledger itself in manual mode (every ledger verb's flag).
    'webhook-url': Flags.string({ summary: 'Where to POST events: an https:// URL, or http:// to a loopback host (kept only in the ledger; shown as its origin).', required: true }),
    'secret-file': Flags.string({ summary: 'Absolute path of a private (0600) file of at least 32 bytes whose content signs each delivery.', required: true }),
    events: Flags.string({ summary: 'Only these event types, comma-separated (default: all).' }),
    format: Flags.option({ options: ['lexec', 'slack'] as const, summary: 'lexec (default): the event as GET /events shows it; slack: a Slack incoming-webhook message.' })(),
    from: Flags.string({ summary: 'Deliver from this event id on (default: only events after now).' }),
  };

  protected override async execute(): Promise<WebhookAddResult> {
    const { flags } = await this.parse(LedgerWebhooksAdd);
    return addLedgerWebhook({
      target: ledgerTarget(flags),
      url: flags['webhook-url'],
      secretFile: flags['secret-file'],
      events: flags.events ?? null,
      format: flags.format ?? 'lexec',
      fromEventId: flags.from === undefined ? null : BigInt(wholeNumberFlag(flags.from, '--from', 1, 999_999_999)),
    });
  }

  protected override renderHuman(result: WebhookAddResult, output: Output): void {
    renderWebhookAdded(result, output);
  }
}
