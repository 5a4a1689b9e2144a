/*
 * The executor's own capabilities and when each is accepted (docs/credentials.md "The executor's
 * credential table"). A row is `active` or `revoked`; an active one may carry the end of a
 * rotation's grace (`expires_at`), after which it is refused like a revoked one. Pure: the clock
 * is an argument.
 */

/** The kinds of capability the executor itself accepts (its own capability at the ledger is the ledger's). */
export const EXECUTOR_CREDENTIAL_KINDS = ['caller', 'reconciliation'] as const;
export type ExecutorCredentialKind = (typeof EXECUTOR_CREDENTIAL_KINDS)[number];

/** A credential id: its kind and the first 16 hex digits of its digest (`caller-0f3a…`). Not a secret. */
export const EXECUTOR_CREDENTIAL_ID = /^(caller|reconciliation)-[0-9a-f]{16}$/;

/**
 * What a credential is as of now: `active` (accepted, no end set), `expiring` (accepted until
 * the end of a rotation's grace), `expired` (that grace is over: refused) or `revoked` (refused).
 */
export type CredentialStanding = 'active' | 'expiring' | 'expired' | 'revoked';

/** The longest grace a rotation may give the capability it replaces: one day. */
export const MAX_GRACE_SECONDS = 86_400;

/**
 * How stale `last_used_at` may get before a request writes it again: minute precision is enough
 * for "is this capability still used?", and the authentication of every request stays a read.
 */
export const LAST_USED_RESOLUTION_MS = 60_000;

export interface CredentialTimes {
  readonly status: 'active' | 'revoked';
  /** ms since the epoch; null when no grace was set. */
  readonly expiresAt: number | null;
}

export function credentialStanding(credential: CredentialTimes, now: number): CredentialStanding {
  if (credential.status === 'revoked') return 'revoked';
  if (credential.expiresAt === null) return 'active';
  return now < credential.expiresAt ? 'expiring' : 'expired';
}

/** Whether a request presenting the capability is admitted. */
export function isAccepted(standing: CredentialStanding): boolean {
  return standing === 'active' || standing === 'expiring';
}

/** Whether a use at `now` should be recorded (the last one recorded is a minute old, or none is). */
export function lastUseIsStale(lastUsedAt: number | null, now: number): boolean {
  return lastUsedAt === null || now - lastUsedAt >= LAST_USED_RESOLUTION_MS;
}

/** The id a capability of `kind` is registered under, from the lookup part of its digest. */
export function executorCredentialId(kind: ExecutorCredentialKind, lookup: string): string {
  return `${kind}-${lookup}`;
}
