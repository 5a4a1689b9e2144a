import { Flags } from '@oclif/core';
import { LexecCommand } from '../../../cli/lexec-command.js';
import { ledgerTarget, ledgerTargetFlags } from '../../../cli/ledger-flags.js';
import type { Output } from '../../../terminal/output.js';
import { renderWebhookSinks } from '../../../ledger/client/render-ledger.js';
import { listLedgerWebhooks, type WebhookListResult } from '../../../ledger/client/ledger-webhooks.js';

export default class LedgerWebhooksList extends LexecCommand<WebhookListResult> {
  static override summary = 'List the webhook sinks: URL (its origin only), format, event types, deliveries by status (admin token).';
  static override description = 'A sink\'s URL is shown as its origin followed by /… : its path may be a credential (a Slack webhook\'s is). Never shows the secret.';
  static override examples = ['<%= config.bin %> <%= command.id %>', '<%= config.bin %> <%= command.id %> --all --json'];
  static override flags = { ...ledgerTargetFlags, all: Flags.boolean({ summary: 'Removed sinks too.' }) };

  protected override async execute(): Promise<WebhookListResult> {
    const { flags } = await this.parse(LedgerWebhooksList);
    return listLedgerWebhooks({ target: ledgerTarget(flags), all: flags.all });
  }

  protected override renderHuman(result: WebhookListResult, output: Output): void {
    renderWebhookSinks(result, output);
  }
}
