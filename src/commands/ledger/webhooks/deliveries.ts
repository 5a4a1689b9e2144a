import { Flags } from '@oclif/core';
import { rowIdFlag, wholeNumberFlag } from '../../../cli/flag-values.js';
import { LexecCommand } from '../../../cli/lexec-command.js';
import { ledgerTarget, ledgerTargetFlags } from '../../../cli/ledger-flags.js';
import type { Output } from '../../../terminal/output.js';
import { renderWebhookDeliveries } from '../../../ledger/client/render-ledger.js';
import { listLedgerWebhookDeliveries, type WebhookDeliveriesResult } from '../../../ledger/client/ledger-webhooks.js';

export default class LedgerWebhooksDeliveries extends LexecCommand<WebhookDeliveriesResult> {
  static override summary = 'Show webhook deliveries, newest first: status, attempts, how the last attempt went (admin token).';
  static override description = 'pending: not yet answered 2xx (retried with backoff); delivered: answered 2xx; failed: retries ended 24 h after the event, or the sink was removed. The last answer is an HTTP status or an error class (timeout, connection_refused, connection_failed, secret_file_unreadable); never a response body.';
  static override examples = ['<%= config.bin %> <%= command.id %> --failed', '<%= config.bin %> <%= command.id %> --sink whk_3f1c2b9e-8d4a-4f6e-9b2c-7a1d5e8f0c34 --json', '<%= config.bin %> <%= command.id %> --failed --before 4180', '<%= config.bin %> <%= command.id %> --event 1234'];
  static override flags = {
    ...ledgerTargetFlags,
    failed: Flags.boolean({ summary: 'Only failed deliveries.' }),
    sink: Flags.string({ summary: 'Only the deliveries of this sink (whk_…).' }),
    limit: Flags.string({ summary: 'At most this many (1-500; the ledger defaults to 100).' }),
    before: Flags.string({ summary: 'Only deliveries older than this delivery id (the next page: as the previous page ends).' }),
    event: Flags.string({ summary: 'Only the deliveries of this event id (as `lexec ledger events` numbers them): one per sink that took it up.' }),
  };

  protected override async execute(): Promise<WebhookDeliveriesResult> {
    const { flags } = await this.parse(LedgerWebhooksDeliveries);
    return listLedgerWebhookDeliveries({
      target: ledgerTarget(flags),
      failed: flags.failed,
      sinkId: flags.sink ?? null,
      limit: flags.limit === undefined ? null : wholeNumberFlag(flags.limit, '--limit', 1, 500),
      before: flags.before === undefined ? null : rowIdFlag(flags.before, '--before', 'a delivery id: a whole number, as a page of `lexec ledger webhooks deliveries` ends'),
      eventId: flags.event === undefined ? null : rowIdFlag(flags.event, '--event', 'an event id: a whole number, as `lexec ledger events` numbers them'),
    });
  }

  protected override renderHuman(result: WebhookDeliveriesResult, output: Output): void {
    renderWebhookDeliveries(result, output);
    if (result.next_before !== null) output.diagnostics.line(output.diagnostics.style.dim(`Older deliveries: --before ${result.next_before}.`));
  }
}
