import type { LedgerAuthorization } from '../wire/answers.js';
import type { AuthorizationStatus } from '../authorization-rules.js';
import { expireAuthorizations, type LedgerContext } from './current-authorization.js';

export interface AuthorizationFilter {
  agent_id?: string | undefined;
  status?: AuthorizationStatus | undefined;
  limit: number;
}

/** The admin's listing, newest first; expiries the clock has reached are persisted first. */
export function listAuthorizations(context: LedgerContext, filter: AuthorizationFilter): LedgerAuthorization[] {
  const { store } = context;
  return store.immediate(() => {
    expireAuthorizations(context);
    const rows = store.list({ agentId: filter.agent_id ?? null, status: filter.status ?? null, limit: filter.limit });
    return rows.map((row) => store.authorizationView(row));
  });
}

/** What waits for an approver, oldest first: requests that have not expired. */
export function pendingApprovals(context: LedgerContext): LedgerAuthorization[] {
  const { store } = context;
  return store.immediate(() => {
    expireAuthorizations(context);
    return store.pendingApprovals().map((row) => store.authorizationView(row));
  });
}
