import { tlsFailure, trustingHttpsAgent } from '../http/tls-trust.js';
import http from 'node:http';
import https from 'node:https';
import { z } from 'zod';
import {
  agentsAnswerSchema,
  authorizationSchema,
  claimsAnswerSchema,
  errorBodySchema,
  resolutionAnswerSchema,
  versionSchema,
  type LedgerClaim,
  type LedgerResolution,
  type LedgerVersion,
} from '../ledger/wire/answers.js';
import type { claimBody, releaseBody } from '../ledger/wire/requests.js';

/*
 * The executor's client of the ledger (executor credential). Only what the executor needs:
 * public version, the marked protected probe, the conditional claim (which resolves), settle,
 * release and reconciliation. Responses are parsed with zod; amounts arrive as digit strings.
 */

/** The ledger could not be asked: network failure, timeout, 5xx or an unreadable answer. */
export class LedgerUnavailable extends Error {
  constructor(readonly detail: string) {
    super(`ledger unavailable: ${detail}`);
    this.name = 'LedgerUnavailable';
  }
}

/** The ledger answered with a refusal (4xx). */
export class LedgerRefused extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    readonly reasonCode: string | undefined,
  ) {
    super(`ledger refused: ${status} ${code}${reasonCode === undefined ? '' : ` ${reasonCode}`}`);
    this.name = 'LedgerRefused';
  }
}

/** What an execution needs of the authorization it claims. */
export interface ClaimRequirement {
  readonly currency: NonNullable<z.input<typeof claimBody>['require']>['currency'];
  readonly minHeldUnits: bigint;
  /** The execution's target: an authorization that names a target is claimed only for that one. */
  readonly targetId?: string;
}

export interface LedgerGateway {
  version(): Promise<LedgerVersion>;
  /** The protected readiness probe with the executor credential (spec §4.6). */
  probe(): Promise<void>;
  /**
   * Claims the token for the execution and answers the authoritative resolution. With a
   * requirement the ledger checks it in the claim's transaction and claims nothing when the
   * authorization does not meet it (422 `requirement_not_met`).
   */
  claim(tokenId: string, executionId: string, requirement?: ClaimRequirement): Promise<LedgerResolution>;
  /** Settles with a precise receipt; returns the ledger's settlement id. Idempotent by receipt id. */
  settle(tokenId: string, executionId: string, receipt: Record<string, unknown>): Promise<{ settlementId: string }>;
  /** Releases the claim (idempotent). */
  release(tokenId: string, executionId: string, reason: z.input<typeof releaseBody>['reason']): Promise<void>;
  /**
   * One page of this executor credential's claims, still `claimed`, at least `olderThanSeconds`
   * old, in token id order after `after` (`next` continues; null: the last page).
   */
  claims(query: { olderThanSeconds: number; after: string | null; limit?: number }): Promise<{ claims: LedgerClaim[]; next: string | null }>;
  /** Parks the claimed authorization for reconciliation with evidence (one open record). */
  openReconciliation(tokenId: string, executionId: string, reason: string, evidence: Record<string, unknown>): Promise<void>;
  /** Closes kept-alive connections (at shutdown). */
  close(): void;
}

/**
 * The executor's capability at the ledger: fixed, or asked for before each call (its file followed
 * while the executor runs, so a rotated capability is used from the next call on).
 */
export type LedgerCredential = string | { current(): Promise<string> };

export interface LedgerGatewayOptions {
  readonly endpoint: string;
  readonly credential: LedgerCredential;
  readonly timeoutMs?: number;
  /** The marker of the readiness probe; it changes only the ledger's logging. */
  readonly probeMarker?: string;
  /** The CA certificate (PEM) an https:// ledger must prove itself against (`ledger.ca_file`). */
  readonly caCertificate?: string;
}

/** Largest ledger answer the executor reads. */
const MAX_ANSWER_BYTES = 1024 * 1024;

export function createLedgerGateway(options: LedgerGatewayOptions): LedgerGateway {
  const endpoint = new URL(options.endpoint);
  const secure = endpoint.protocol === 'https:';
  // Parsed once: a request from options costs less than one from a URL string, parsed each time.
  const target = {
    protocol: endpoint.protocol,
    hostname: endpoint.hostname.replace(/^\[(.*)\]$/, '$1'),
    port: endpoint.port,
    pathPrefix: endpoint.pathname.replace(/\/+$/, ''),
  };
  // Keep-alive: reconnecting for each call would cost more than the call. node:http is used
  // over fetch for its lower per-request overhead.
  const agent = secure ? trustingHttpsAgent(options.caCertificate) : new http.Agent({ keepAlive: true });
  const timeoutMs = options.timeoutMs ?? 5_000;
  const { credential } = options;
  const currentCredential = typeof credential === 'string' ? () => Promise.resolve(credential) : () => credential.current();

  function send(method: string, path: string, body: string | undefined, token: string | null): Promise<{ status: number; text: string }> {
    return new Promise((resolve, reject) => {
      const headers: Record<string, string> = { accept: 'application/json' };
      if (token !== null) headers.authorization = `Bearer ${token}`;
      if (body !== undefined) {
        headers['content-type'] = 'application/json';
        headers['content-length'] = String(Buffer.byteLength(body));
      }
      const requestOptions = { protocol: target.protocol, hostname: target.hostname, port: target.port, path: `${target.pathPrefix}${path}`, method, agent, headers };
      const request = (secure ? https : http).request(requestOptions, (response) => {
        const chunks: Buffer[] = [];
        let size = 0;
        response.on('data', (chunk: Buffer) => {
          size += chunk.length;
          if (size > MAX_ANSWER_BYTES) request.destroy(new LedgerUnavailable('answer too large'));
          else chunks.push(chunk);
        });
        response.on('end', () => {
          resolve({ status: response.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') });
        });
        response.on('error', reject);
      });
      request.setTimeout(timeoutMs, () => request.destroy(new LedgerUnavailable('timeout')));
      request.on('error', (error) => {
        const tls = tlsFailure(error);
        // A ledger that does not prove itself is not used: nothing was sent to it.
        reject(error instanceof LedgerUnavailable ? error : new LedgerUnavailable(tls === null ? 'connection failed' : `not trusted: ${tls.why} (${tls.code})`));
      });
      request.end(body);
    });
  }

  async function request<S extends z.ZodType>(method: string, path: string, schema: S, body?: unknown, authenticated = true): Promise<z.output<S>> {
    const token = authenticated ? await currentCredential() : null;
    const answer = await send(method, path, body === undefined ? undefined : JSON.stringify(body), token);
    if (answer.status >= 500 || (answer.status >= 300 && answer.status < 400)) throw new LedgerUnavailable(`HTTP ${answer.status}`);
    let payload: unknown;
    try {
      payload = JSON.parse(answer.text);
    } catch {
      throw new LedgerUnavailable(`unreadable answer (HTTP ${answer.status})`);
    }
    if (answer.status >= 400) {
      const parsed = errorBodySchema.safeParse(payload);
      throw new LedgerRefused(answer.status, parsed.success ? parsed.data.error.code : 'unknown', parsed.success ? parsed.data.error.reason_code : undefined);
    }
    const parsed = schema.safeParse(payload);
    if (!parsed.success) throw new LedgerUnavailable('answer did not match the ledger contract');
    return parsed.data;
  }

  // The settle answer is the authorization; the executor reads only its settlement's id.
  const settleEnvelope = z.object({ authorization: z.object({ settlement: authorizationSchema.shape.settlement.unwrap().pick({ settlement_id: true }) }) });

  return {
    version: () => request('GET', '/version', versionSchema, undefined, false),
    async probe() {
      await request('GET', `/agents?operational_probe=${encodeURIComponent(options.probeMarker ?? 'executor-readiness')}`, agentsAnswerSchema);
    },
    close: () => {
      agent.destroy();
    },
    async settle(tokenId, executionId, receipt) {
      const answer = await request('POST', `/executor/authorizations/${encodeURIComponent(tokenId)}/settle`, settleEnvelope, {
        execution_id: executionId,
        receipt,
      });
      return { settlementId: answer.authorization.settlement.settlement_id };
    },
    async release(tokenId, executionId, reason) {
      await request('POST', `/executor/authorizations/${encodeURIComponent(tokenId)}/release`, z.object({}).loose(), { execution_id: executionId, reason });
    },
    async openReconciliation(tokenId, executionId, reason, evidence) {
      await request('POST', `/executor/authorizations/${encodeURIComponent(tokenId)}/reconciliation`, z.object({}).loose(), {
        execution_id: executionId,
        reason,
        evidence,
      });
    },
    async claims(query) {
      const search = new URLSearchParams({ older_than_seconds: String(query.olderThanSeconds) });
      if (query.limit !== undefined) search.set('limit', String(query.limit));
      if (query.after !== null) search.set('after', query.after);
      const page = await request('GET', `/executor/claims?${search.toString()}`, claimsAnswerSchema);
      return { claims: page.claims, next: page.next_after };
    },
    async claim(tokenId, executionId, requirement) {
      const body: z.input<typeof claimBody> =
        requirement === undefined
          ? { execution_id: executionId }
          : {
              execution_id: executionId,
              require: {
                currency: requirement.currency,
                min_held_units: requirement.minHeldUnits.toString(),
                ...(requirement.targetId === undefined ? {} : { target_id: requirement.targetId }),
              },
            };
      return (await request('POST', `/executor/authorizations/${encodeURIComponent(tokenId)}/claim`, resolutionAnswerSchema, body)).authorization;
    },
  };
}
