import type { SpendGrouping } from '../summarise-spend.js';
import type { LedgerSpendReport } from '../wire/answers.js';
import type { LedgerConnector } from './ledger-connector.js';

/** `ledger spend`: the ledger's spend report as it answered it (docs/ledger.md "Spend reports"). */
export type SpendResult = LedgerSpendReport;

export interface SpendRequest {
  readonly target: LedgerConnector;
  readonly by: SpendGrouping;
  /** A date (`2026-11-01`, read in the ledger's time zone) or an ISO 8601 time with its offset; null: from the first settlement. */
  readonly since: string | null;
  /** The same, exclusive; null: up to now. */
  readonly until: string | null;
}

/**
 * `ledger spend` (admin token; in manual mode an approver's works too): settled amounts per
 * agent, target or calendar period, and apart what is held now.
 */
export async function readSpendReport(request: SpendRequest): Promise<SpendResult> {
  const client = await request.target('admin');
  return client.spendReport({ by: request.by, since: request.since ?? undefined, until: request.until ?? undefined });
}
