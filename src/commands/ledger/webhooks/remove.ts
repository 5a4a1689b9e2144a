import { Args } from '@oclif/core';
import { LexecCommand } from '../../../cli/lexec-command.js';
import { ledgerTarget, ledgerTargetFlags } from '../../../cli/ledger-flags.js';
import type { Output } from '../../../terminal/output.js';
import { renderWebhookRemoval } from '../../../ledger/client/render-ledger.js';
import { removeLedgerWebhook, type WebhookRemoveResult } from '../../../ledger/client/ledger-webhooks.js';

export default class LedgerWebhooksRemove extends LexecCommand<WebhookRemoveResult> {
  static override summary = 'Remove a webhook sink: nothing more is delivered to it (admin token).';
  static override description = 'Its pending deliveries fail (sink_removed); its history stays (`lexec ledger webhooks list --all`). Removing a removed sink changes nothing (changed: false).';
  static override examples = ['<%= config.bin %> <%= command.id %> whk_3f1c2b9e-8d4a-4f6e-9b2c-7a1d5e8f0c34'];
  static override args = { sink_id: Args.string({ required: true, description: 'The sink to remove (as `lexec ledger webhooks list` shows it).' }) };
  static override flags = { ...ledgerTargetFlags };

  protected override async execute(): Promise<WebhookRemoveResult> {
    const { args, flags } = await this.parse(LedgerWebhooksRemove);
    return removeLedgerWebhook({ target: ledgerTarget(flags), sinkId: args.sink_id });
  }

  protected override renderHuman(result: WebhookRemoveResult, output: Output): void {
    renderWebhookRemoval(result, output);
  }
}
