/*
 * The ledger's events (docs/ledger.md "Events"): one row per change the ledger records, written in
 * the transaction of that change (store/event-store.ts), so no crash keeps a change and loses its
 * event or the other way round. Delivered from the table: `GET /events`, `lexec ledger events`,
 * the console, webhook sinks. An event names its agent, target and authorization and carries
 * amounts as digit strings; never a prompt, a capability or other free text.
 */

export const LEDGER_EVENT_TYPES = [
  'authorization.requested',
  'authorization.approved',
  'authorization.denied',
  'authorization.expired',
  'authorization.cancelled',
  'authorization.refused',
  'approval.waiting',
  'authorization.settled',
  'authorization.released',
  'reconciliation.opened',
  'reconciliation.resolved',
  'agent.suspended',
  'agent.resumed',
  'budget.threshold_crossed',
] as const;
export type LedgerEventType = (typeof LEDGER_EVENT_TYPES)[number];

/**
 * An event's details: ledger-made values only (statuses, reasons from closed lists, budget names,
 * periods, percentages, amounts as digit strings, ids). Strings are redacted of secret shapes
 * when written, should a caller err.
 */
export type LedgerEventDetails = Readonly<Record<string, string | number | boolean | null>>;
