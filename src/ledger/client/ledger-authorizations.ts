import type { AuthorizationStatus } from '../authorization-rules.js';
import type { LedgerAuthorization } from '../wire/answers.js';
import type { LedgerConnector } from './ledger-connector.js';

export interface AuthorizationResult {
  readonly authorization: LedgerAuthorization;
}

export interface AuthorizationListResult {
  readonly authorizations: readonly LedgerAuthorization[];
}

/** `ledger authorizations request`: the authorization, and whether it is the open one the idempotency key opened earlier. */
export interface AuthorizationRequestResult extends AuthorizationResult {
  readonly replayed: boolean;
}

/** `ledger authorizations request` (agent token): USD micro-units, scale 6; with an idempotency key, an identical repeat answers the open authorization it opened. */
export async function requestLedgerAuthorization(request: {
  readonly target: LedgerConnector;
  readonly amountUnits: bigint;
  readonly purpose?: string | undefined;
  readonly idempotencyKey?: string | undefined;
}): Promise<AuthorizationRequestResult> {
  const client = await request.target('agent');
  return client.requestAuthorization({ amountUnits: request.amountUnits, purpose: request.purpose, idempotencyKey: request.idempotencyKey });
}

/** `ledger authorizations list` (admin token): newest first, filtered by the ledger. */
export async function listLedgerAuthorizations(request: {
  readonly target: LedgerConnector;
  readonly agentId?: string | undefined;
  readonly status?: AuthorizationStatus | undefined;
  readonly limit?: number | undefined;
}): Promise<AuthorizationListResult> {
  const client = await request.target('admin');
  return { authorizations: await client.listAuthorizations({ agentId: request.agentId, status: request.status, limit: request.limit }) };
}

/** `ledger approvals list` (approver token): the requests waiting for a decision, oldest first. */
export async function listLedgerApprovals(request: { readonly target: LedgerConnector }): Promise<AuthorizationListResult> {
  const client = await request.target('approver');
  return { authorizations: await client.pendingApprovals() };
}

/** `ledger authorizations show` (admin, approver or the owning agent's token). */
export async function showLedgerAuthorization(request: { readonly target: LedgerConnector; readonly tokenId: string }): Promise<AuthorizationResult> {
  const client = await request.target('admin');
  return { authorization: await client.showAuthorization(request.tokenId) };
}

/** `ledger authorizations approve|deny` (approver token). Repeating the same decision is a no-op. */
export async function decideLedgerAuthorization(request: {
  readonly target: LedgerConnector;
  readonly tokenId: string;
  readonly decision: 'approve' | 'deny';
  readonly reason?: string | undefined;
}): Promise<AuthorizationResult> {
  const client = await request.target('approver');
  return { authorization: await client.decideAuthorization(request.tokenId, request.decision, request.reason) };
}
