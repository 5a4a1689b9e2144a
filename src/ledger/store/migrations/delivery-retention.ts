import type { Migration } from '../../../storage/open-database.js';

export const DELIVERY_RETENTION_MIGRATIONS: readonly Migration[] = [
  {
    version: 19,
    name: 'delivered webhook deliveries age out',
    // docs/ledger.md "Webhooks", docs/decisions.md "Delivered webhook deliveries are kept for a
    // retention, failed ones until an operator looks": a delivery row was kept for ever — one per
    // event per sink, so a busy ledger's file grew by every event times every sink. The delivery
    // worker now deletes delivered rows older than the retention (webhook_delivery
    // .delivered_retention_days, 30 days by default), a batch per turn, oldest first: this index
    // finds them without walking the delivered rows still kept. Pending and failed rows are never
    // removed. The deliveries' kept counts stay what was delivered (a counter only grows); what
    // the retention removed is kept beside them, status 'pruned', so the invariant checker can
    // still hold the counts to the rows (delivered = the rows delivered + pruned).
    up: `
      CREATE INDEX webhook_deliveries_delivered_at ON webhook_deliveries (delivered_at) WHERE status = 'delivered';
    `,
  },
];
