import { randomUUID } from 'node:crypto';
import type { LedgerContext } from './current-authorization.js';

/** The account every authorization belongs to: created once, on first use, then kept. Call inside a transaction. */
export function ownerAccountId({ store, now }: LedgerContext): string {
  const existing = store.ownerAccountId();
  if (existing !== undefined) return existing;
  const accountId = `acct_${randomUUID()}`;
  store.insertOwner(accountId, now());
  return accountId;
}
