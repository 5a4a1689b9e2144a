/*
 * The executor's own capabilities and when each is accepted (docs/credentials.md "The executor's
 * credential table"). A row is `active` or `revoked`; an active one may carry the end of a
 * rotation's grace (`expires_at`), after which it is refused like a revoked one. Pure: the clock
 * is an argument.
 */

/** The kinds of capability the executor itself accepts (its own capability at the ledger is the ledger's). */
export const EXECUTOR_CREDENTIAL_KINDS = ['caller', 'reconciliation', 'metrics'] as const;
export type ExecutorCredentialKind = (typeof EXECUTOR_CREDENTIAL_KINDS)[number];

/**
 * The kinds `executor credentials rotate` replaces on its own. A stack's metrics capability is one
 * capability registered at both servers (docs/metrics.md), so replacing it at the executor alone
 * would lock a scraper out of the ledger: it is replaced by hand (a new file, both registered).
 */
export const ROTATABLE_EXECUTOR_CREDENTIAL_KINDS = ['caller', 'reconciliation'] as const;

/** A credential id: its kind and the first 16 hex digits of its digest (`caller-0f3a…`). Not a secret. */
export const EXECUTOR_CREDENTIAL_ID = /^(caller|reconciliation|metrics)-[0-9a-f]{16}$/;

/**
 * What a credential is as of now, as the ledger shows its own: `active` (accepted, no end set),
 * `expiring` (accepted until the end of a rotation's grace) or `revoked` (refused: revoked, or its
 * grace is over).
 */
export type CredentialStanding = 'active' | 'expiring' | 'revoked';

export interface CredentialTimes {
  readonly status: 'active' | 'revoked';
  /** ms since the epoch; null while not revoked. */
  readonly revokedAt: number | null;
  /** ms since the epoch; null when no grace was set. */
  readonly expiresAt: number | null;
}

/** From when the credential is refused: its revocation or the end of its grace, whichever is first; null: no end. */
export function refusedFrom(credential: CredentialTimes): number | null {
  const ends = [credential.status === 'revoked' ? credential.revokedAt : null, credential.expiresAt].filter((end): end is number => end !== null);
  return ends.length === 0 ? null : Math.min(...ends);
}

export function credentialStanding(credential: CredentialTimes, now: number): CredentialStanding {
  const from = refusedFrom(credential);
  if (from === null) return 'active';
  return now < from ? 'expiring' : 'revoked';
}

/** Whether a request presenting the capability is admitted. */
export function isAccepted(standing: CredentialStanding): boolean {
  return standing !== 'revoked';
}

/**
 * `last_used_at` is kept to the minute, as the ledger keeps its own (minute precision is enough
 * for "is this capability still used?"): one write per credential per minute at most, so the
 * authentication of every request stays a read.
 */
const MINUTE_MS = 60_000;

/** The minute a use at `now` is recorded as (its start). */
export function lastUseMinute(now: number): number {
  return Math.floor(now / MINUTE_MS) * MINUTE_MS;
}

/** Whether a use at `now` is to be recorded: none is yet, or the last one recorded is of an earlier minute. */
export function lastUseIsStale(lastUsedAt: number | null, now: number): boolean {
  return lastUsedAt === null || lastUsedAt < lastUseMinute(now);
}

/** The id a capability of `kind` is registered under, from the lookup part of its digest. */
export function executorCredentialId(kind: ExecutorCredentialKind, lookup: string): string {
  return `${kind}-${lookup}`;
}
