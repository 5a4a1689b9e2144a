import type { FastifyRequest } from 'fastify';
import { capabilityKind, type CredentialKind } from '../credentials/capability.js';
import { ApiError } from './api-error.js';

export interface AuthenticatedPrincipal {
  readonly credential_id: string;
  readonly kind: CredentialKind;
  readonly agent_id: string | null;
}

/**
 * Builds a guard that admits a request only with `Authorization: Bearer <capability>` of one of
 * `kinds`. Every failure is the same bare 401: nothing tells a caller whether the capability
 * was malformed, unknown or of the wrong kind.
 */
export function credentialGuard(authenticate: (token: string) => AuthenticatedPrincipal | null) {
  return function requireCredential(request: FastifyRequest, ...kinds: CredentialKind[]): AuthenticatedPrincipal {
    const header = request.headers.authorization;
    // The scheme is case-insensitive (RFC 9110 §11.1): `bearer` and `BEARER` are Bearer too.
    const match = typeof header === 'string' ? /^bearer +(\S+)$/i.exec(header) : null;
    const token = match?.[1] ?? '';
    const principal = capabilityKind(token) === null ? null : authenticate(token);
    if (principal === null || !kinds.includes(principal.kind)) throw new ApiError(401, 'unauthorized');
    return principal;
  };
}
