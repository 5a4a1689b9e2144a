import { z } from 'zod';

/*
 * The executor's client of the ledger (executor credential). Only what the executor needs:
 * public version, the marked protected probe, resolve and claim (settle and release follow with
 * durable execution). Responses are parsed with zod; amounts arrive as digit strings.
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

const digits = z.string().regex(/^\d+$/).transform((value) => BigInt(value));

const versionSchema = z.object({
  product: z.string(),
  product_version: z.string(),
  contract_version: z.string(),
  commit: z.string(),
  build_kind: z.enum(['release', 'development']),
  contract_level: z.string().optional(),
});
export type LedgerVersion = z.output<typeof versionSchema>;

const resolutionSchema = z.object({
  token_id: z.string(),
  account_id: z.string().min(1),
  agent_id: z.string().min(1),
  status: z.string(),
  held_units: digits,
  units_scale: z.literal(6),
  currency: z.string(),
  expires_at: z.string(),
  execution_id: z.string().nullable(),
});
export type LedgerResolution = z.output<typeof resolutionSchema>;

const errorSchema = z.object({ error: z.object({ code: z.string(), reason_code: z.string().optional() }) });

export interface LedgerGateway {
  version(): Promise<LedgerVersion>;
  /** The protected readiness probe with the executor credential (spec §4.6). */
  probe(): Promise<void>;
  resolve(tokenId: string): Promise<LedgerResolution>;
  claim(tokenId: string, executionId: string): Promise<LedgerResolution>;
}

export interface LedgerGatewayOptions {
  readonly endpoint: string;
  readonly credential: string;
  readonly timeoutMs?: number;
  /** The marker of the readiness probe; it changes only the ledger's logging. */
  readonly probeMarker?: string;
}

export function createLedgerGateway(options: LedgerGatewayOptions): LedgerGateway {
  const base = options.endpoint.replace(/\/+$/, '');

  async function request<S extends z.ZodType>(method: string, path: string, schema: S, body?: unknown, authenticated = true): Promise<z.output<S>> {
    let response: Response;
    try {
      response = await fetch(`${base}${path}`, {
        method,
        redirect: 'manual',
        signal: AbortSignal.timeout(options.timeoutMs ?? 5_000),
        headers: {
          ...(authenticated ? { authorization: `Bearer ${options.credential}` } : {}),
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
    } catch (error) {
      throw new LedgerUnavailable(error instanceof Error && error.name === 'TimeoutError' ? 'timeout' : 'connection failed');
    }
    let payload: unknown;
    try {
      payload = await response.json();
    } catch {
      throw new LedgerUnavailable(`unreadable answer (HTTP ${response.status})`);
    }
    if (response.status >= 500 || (response.status >= 300 && response.status < 400)) throw new LedgerUnavailable(`HTTP ${response.status}`);
    if (response.status >= 400) {
      const parsed = errorSchema.safeParse(payload);
      throw new LedgerRefused(response.status, parsed.success ? parsed.data.error.code : 'unknown', parsed.success ? parsed.data.error.reason_code : undefined);
    }
    const parsed = schema.safeParse(payload);
    if (!parsed.success) throw new LedgerUnavailable('answer did not match the ledger contract');
    return parsed.data;
  }

  const authorizationEnvelope = z.object({ authorization: resolutionSchema });

  return {
    version: () => request('GET', '/version', versionSchema, undefined, false),
    async probe() {
      await request('GET', `/agents?operational_probe=${encodeURIComponent(options.probeMarker ?? 'executor-readiness')}`, z.object({ agents: z.array(z.unknown()) }));
    },
    resolve: async (tokenId) => (await request('GET', `/executor/authorizations/${encodeURIComponent(tokenId)}`, authorizationEnvelope)).authorization,
    claim: async (tokenId, executionId) =>
      (await request('POST', `/executor/authorizations/${encodeURIComponent(tokenId)}/claim`, authorizationEnvelope, { execution_id: executionId })).authorization,
  };
}
