import { LedgerError } from '../ledger-error.js';
import type { AuditQuery, AuditStore } from '../store/audit-store.js';
import type { SuspensionStore } from '../store/suspension-store.js';
import type { LedgerAuditPage } from '../wire/answers.js';

/**
 * The audit trail as the admin reads it (`GET /audit`): one page, oldest first. An agent the
 * ledger does not have is refused by name (`not_found`, field `agent_id`) rather than answered
 * with an empty page that looks like an agent nobody acted on.
 */
export function auditTrail(context: { readonly audit: AuditStore; readonly suspensions: SuspensionStore }, query: AuditQuery): LedgerAuditPage {
  if (query.agentId !== null && context.suspensions.agent(query.agentId) === undefined) {
    throw new LedgerError('not_found', 'not_found', { reasonCode: 'agent_not_found', fields: ['agent_id'] });
  }
  return context.audit.page(query);
}
