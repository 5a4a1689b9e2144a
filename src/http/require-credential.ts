import type { FastifyRequest, onRequestAsyncHookHandler } from 'fastify';
import { capabilityKind, type CredentialKind } from '../credentials/capability.js';
import { ApiError } from './api-error.js';

export interface AuthenticatedPrincipal {
  readonly credential_id: string;
  readonly kind: CredentialKind;
  readonly agent_id: string | null;
}

export interface CredentialGuard<P extends AuthenticatedPrincipal = AuthenticatedPrincipal> {
  /**
   * A route's `onRequest` hook admitting only `Authorization: Bearer <capability>` of one of
   * `kinds`. `onRequest` runs before the body is read and parsed (preValidation and preHandler
   * run after), so a caller without the route's credential never reaches the JSON parser.
   */
  requires(...kinds: CredentialKind[]): onRequestAsyncHookHandler;
  /** The principal the route's `requires` hook admitted (a route without one is a bug). */
  principal(request: FastifyRequest): P;
}

/**
 * Builds a guard over `authenticate`. Every failure is the same bare 401: nothing tells a caller
 * whether the capability was malformed, unknown or of the wrong kind.
 */
export function credentialGuard<P extends AuthenticatedPrincipal>(authenticate: (token: string) => P | null): CredentialGuard<P> {
  const admitted = new WeakMap<FastifyRequest, P>();
  return {
    requires(...kinds) {
      return (request) => {
        const header = request.headers.authorization;
        // The scheme is case-insensitive (RFC 9110 §11.1): `bearer` and `BEARER` are Bearer too.
        const match = typeof header === 'string' ? /^bearer +(\S+)$/i.exec(header) : null;
        const token = match?.[1] ?? '';
        const principal = capabilityKind(token) === null ? null : authenticate(token);
        if (principal === null || !kinds.includes(principal.kind)) return Promise.reject(new ApiError(401, 'unauthorized'));
        admitted.set(request, principal);
        return Promise.resolve();
      };
    },
    principal(request) {
      const principal = admitted.get(request);
      if (principal === undefined) throw new Error(`route ${request.routeOptions.url ?? 'unmatched'} has no credential hook`);
      return principal;
    },
  };
}
