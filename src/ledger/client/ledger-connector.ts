import type { LedgerClient } from './ledger-client.js';

/** The credential a ledger verb presents; in profile mode it picks the handoff's file. */
export type LedgerRole = 'admin' | 'agent' | 'approver';

/**
 * How a ledger verb reaches its ledger: a client presenting the capability of `role`. The verbs
 * know nothing of profiles, handoffs or flags; the stack client (src/stack-client/connect-ledger.ts)
 * builds this from what the command line said, and connects only when the verb asks.
 */
export type LedgerConnector = (role: LedgerRole) => Promise<LedgerClient>;
