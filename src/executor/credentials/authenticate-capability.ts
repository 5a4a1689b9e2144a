import Database from 'better-sqlite3';
import { capabilityDigest, digestLookup, digestsEqual } from '../../credentials/capability.js';
import type { AuthenticatedPrincipal } from '../../http/require-credential.js';
import { credentialStanding, isAccepted, lastUseIsStale, lastUseMinute } from '../domain/credential-standing.js';
import type { CredentialStore } from '../store/credential-store.js';

/**
 * Authenticates a presented capability against the executor's credential table on every request
 * (no cache: a revocation or the end of a grace, written by another process, holds from the next
 * request on). Unknown, revoked and expired capabilities are all `null`: the guard answers the
 * same bare 401 for each. A use is recorded to the minute, at most once a minute per credential,
 * so the hot path stays one indexed read.
 */
export function createCapabilityAuthenticator(store: CredentialStore, now: () => number = Date.now): (token: string) => AuthenticatedPrincipal | null {
  return (token) => {
    const digest = capabilityDigest(token);
    const row = store.byLookup(digestLookup(digest));
    if (row === undefined || !digestsEqual(row.digest, digest)) return null;
    const at = now();
    if (!isAccepted(credentialStanding(row, at))) return null;
    if (lastUseIsStale(row.lastUsedAt, at)) {
      try {
        store.touch(row.credentialId, lastUseMinute(at));
      } catch (error) {
        // Bookkeeping only: a database busy past its timeout (another process writing) does not
        // refuse the request; the next one records the use.
        if (!(error instanceof Database.SqliteError && error.code.startsWith('SQLITE_BUSY'))) throw error;
      }
    }
    return { credential_id: row.credentialId, kind: row.kind, agent_id: null };
  };
}
