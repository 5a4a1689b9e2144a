import { trustingFetch } from '../../http/tls-trust.js';
import { z } from 'zod';
import { SAFE_ABSOLUTE_PATH } from '../../process/loopback-probe.js';
import { answeredWholeNumber } from '../../config/schema-parts.js';
import { badResponse, errorBodySchema, executorResponseError, SAFE_CODE, unreachable } from './executor-client-errors.js';
import { EXECUTION_STATES } from '../domain/execution-states.js';

/*
 * A typed client of the executor HTTP API (docs/executor.md "Endpoints"), as `lexec run` uses it
 * with the caller capability. Every answer is parsed with zod (objects not strict: a newer
 * executor may add fields); every refusal becomes a `UserError` with a stable `executor_*` code.
 * The capability only ever leaves in the Authorization header; redirects are never followed.
 */

const amount = answeredWholeNumber;

const price = z.object({ numerator: z.union([z.string(), z.number()]), denominator: z.union([z.string(), z.number()]) });

/** One entry of `GET /v2/execution-targets`; pricing is checked again by the pricing code. */
export const offeredTargetSchema = z.object({
  target_id: z.string(),
  label: z.string().nullable(),
  provider: z.string(),
  model: z.string(),
  presets: z.array(z.string()),
  default_image_size: z.string(),
  max_image_count: z.number().int(),
  pricing: z.object({ currency: z.string(), unit: z.string(), version: z.string(), by_image_size: z.record(z.string(), price) }),
});
export type OfferedTarget = z.output<typeof offeredTargetSchema>;

export const executionViewSchema = z.object({
  execution_id: z.string().regex(/^exe_[0-9a-f]{32}$/),
  state: z.enum(EXECUTION_STATES),
  phase: z.string().nullable(),
  state_reason: z.string().nullable(),
  receipt: z
    .object({
      receipt_id: z.string(),
      amount_units: amount,
      currency: z.string(),
      ledger_settlement_id: z.string().nullable(),
    })
    .nullable(),
  artifact_count: z.number().int(),
  recommended_action: z.object({ code: z.string(), description: z.string() }),
  /** The frozen pricing (what was asked, the unit price): read by the stack client's delivery check, which parses it. */
  pricing_snapshot: z.unknown().optional(),
});
export type ExecutionView = z.output<typeof executionViewSchema>;

const time = z.string().nullable();

/** One row of `GET /v1/executions` (objects not strict: a newer executor may add fields). */
export const executionSummarySchema = z.object({
  execution_id: z.string().regex(/^exe_[0-9a-f]{32}$/),
  state: z.enum(EXECUTION_STATES),
  phase: z.string().nullable(),
  state_reason: z.string().nullable(),
  agent_id: z.string(),
  target_id: z.string(),
  spend_auth_token_id: z.string(),
  image_count: z.number().int().nullable(),
  image_size: z.string().nullable(),
  artifact_count: z.number().int(),
  held_units: amount.nullable(),
  cost_units: amount.nullable(),
  currency: z.string(),
  created_at: z.string(),
  updated_at: z.string(),
});
export type ExecutionSummary = z.output<typeof executionSummarySchema>;

export const executionPageSchema = z.object({ executions: z.array(executionSummarySchema), next_before: z.string().nullable() });
export type ExecutionPage = z.output<typeof executionPageSchema>;

/** The full detail of `GET /v1/executions/{id}`, as an operator's view reads it. */
export const executionDetailSchema = executionViewSchema.extend({
  target_id: z.string(),
  input: z.object({ prompt: z.string().optional(), image_count: z.number().int().optional(), image_size: z.string().optional() }),
  authorization: z.object({ spend_auth_token_id: z.string(), agent_id: z.string(), held_units: amount.nullable(), currency: z.string() }),
  provider_attempts: z.array(
    z.object({
      attempt_id: z.string(),
      attempt_number: z.number().int(),
      state: z.string(),
      request_id: z.string().nullable(),
      checkpointed: z.boolean(),
      deadline_at: time,
      exact_amount: amount.nullable(),
      /** Decimal places of exact_amount: 6 (micro-units) for new attempts, 2 for converted legacy ones. */
      scale: z.number().int().min(0).max(18).nullable(),
      currency: z.string().nullable(),
    }),
  ),
  receipt: z
    .object({
      receipt_id: z.string(),
      amount_units: amount,
      currency: z.string(),
      provider_request_id: z.string().nullable(),
      receipt_shape: z.string().nullable(),
      ledger_settlement_id: z.string().nullable(),
      created_at: time,
    })
    .nullable(),
  timeline: z.object({
    admitted_at: time,
    submitted_at: time,
    checkpointed_at: time,
    stored_at: time,
    settled_at: time,
    released_at: time,
  }),
  created_at: z.string(),
  updated_at: z.string(),
});
export type ExecutionDetail = z.output<typeof executionDetailSchema>;

/** An ordinal arrives as a decimal string (the store's integers are bigint); small enough for a number. */
const ordinal = amount.refine((value) => value <= 10_000n, 'must be a small ordinal').transform((value) => Number(value));

export const artifactViewSchema = z.object({
  artifact_id: z.string(),
  ordinal,
  media_type: z.string(),
  size_bytes: amount,
  sha256: z.string().regex(/^[0-9a-f]{64}$/),
  content_path: z.string(),
});
export type ArtifactView = z.output<typeof artifactViewSchema>;

export interface ExecutorClientOptions {
  /** Base URL of the executor, e.g. `http://127.0.0.1:7410` (from the handoff). */
  readonly url: string;
  /** The caller capability. Never logged or put in an error. */
  readonly token: string;
  /** Reads the capability again from its file: a request refused with 401 goes once more if it changed (a rotation). */
  readonly reloadToken?: () => Promise<string>;
  readonly timeoutMs?: number;
  /** Largest artifact accepted, in bytes. */
  readonly maxArtifactBytes?: number;
  /**
   * The CA certificate (PEM) an https:// executor's certificate must be signed by: the only
   * trust anchor of this client (src/http/tls-trust.ts). Absent: the system's roots.
   */
  readonly caCertificate?: string;
}


const readinessSchema = z.object({ status: z.string(), reason: z.string().optional(), path: z.string().optional(), address: z.string().optional() });

/** A workflow engine's address as `/readyz` names it: a grpc:// or grpcs:// URL of host and port only. Shown only if it is one. */
const SAFE_ENGINE_ADDRESS = /^grpcs?:\/\/[A-Za-z0-9.\-[\]:]{1,253}\/?$/;

/**
 * What `GET /readyz` says: ready, or not with the reason (and the directory of a `disk_full`, the
 * address of a workflow engine that does not answer).
 */
export type ExecutorReadiness = { readonly ready: true } | { readonly ready: false; readonly reason: string; readonly path?: string; readonly address?: string };

/** One execution awaiting a human, as the reconciliation route lists it (objects not strict). */
export const reconciliationEntrySchema = executionViewSchema.pick({ execution_id: true, state: true, state_reason: true, recommended_action: true, receipt: true }).extend({
  target_id: z.string(),
  /** What was asked: the most images a settlement can bill. */
  input: z.object({ image_count: z.number().int().optional() }).optional(),
  authorization: z.object({ spend_auth_token_id: z.string(), agent_id: z.string().optional(), held_units: amount, currency: z.string() }),
  evidence: z.array(
    z.object({
      attempt_id: z.string(),
      provider_request_id: z.string().nullable(),
      state: z.string(),
      outcome_code: z.string().nullable(),
      delivered_images: z.union([z.number(), z.string()]).nullable(),
      /** When the provider can have received the submission (absent from an older executor). */
      submit_window: z.object({ from: z.string(), until: z.string().nullable() }).optional(),
      /**
       * The value the submission carried that the provider shows (absent from an older executor);
       * `sent` false: its target takes no seed, so the submission did not carry it (absent: sent).
       */
      correlation: z.object({ field: z.string(), value: z.number(), sent: z.boolean().optional() }).optional(),
    }),
  ),
});
export type ReconciliationEntry = z.output<typeof reconciliationEntrySchema>;

export const reconciliationResolvedSchema = z.object({
  replayed: z.boolean(),
  resolution: z.object({ resolution: z.string(), images_billed: z.union([z.number(), z.string()]).nullable(), amount_units: amount.nullable(), note: z.string() }),
  execution: z.object({ execution_id: z.string(), state: z.string(), state_reason: z.string().nullable() }),
});
export type ReconciliationResolved = z.output<typeof reconciliationResolvedSchema>;

export type ExecutorClient = ReturnType<typeof createExecutorClient>;

export function createExecutorClient(options: ExecutorClientOptions) {
  const url = options.url.replace(/\/+$/, '');
  const timeoutMs = options.timeoutMs ?? 15_000;
  const maxArtifactBytes = options.maxArtifactBytes ?? 64 * 1024 * 1024;
  const fetch = trustingFetch(options.caCertificate);

  let token = options.token;

  /** `extra`: a read's own wait on top of the answer timeout, and who may abort it. */
  async function request(method: 'GET' | 'POST', path: string, body?: unknown, extra: { waitMs?: number; signal?: AbortSignal } = {}): Promise<Response> {
    const response = await exchange(method, path, body, extra);
    if (response.status !== 401 || options.reloadToken === undefined) return response;
    // A 401 changed nothing at the executor: after a rotation the same request goes again with the file's new capability.
    const current = await options.reloadToken().catch(() => null);
    if (current === null || current === token) return response;
    await response.body?.cancel();
    token = current;
    return exchange(method, path, body, extra);
  }

  async function exchange(method: 'GET' | 'POST', path: string, body: unknown, extra: { waitMs?: number; signal?: AbortSignal }): Promise<Response> {
    const headers: Record<string, string> = { authorization: `Bearer ${token}` };
    if (body !== undefined) headers['content-type'] = 'application/json';
    const bound = timeoutMs + (extra.waitMs ?? 0);
    try {
      return await fetch(`${url}${path}`, {
        method,
        headers,
        body: body === undefined ? undefined : JSON.stringify(body),
        redirect: 'manual',
        signal: extra.signal === undefined ? AbortSignal.timeout(bound) : AbortSignal.any([AbortSignal.timeout(bound), extra.signal]),
      });
    } catch (error) {
      throw unreachable(url, error, bound);
    }
  }

  async function json<S extends z.ZodType>(
    method: 'GET' | 'POST',
    path: string,
    schema: S,
    body?: unknown,
    extra?: { waitMs?: number; signal?: AbortSignal },
  ): Promise<{ status: number; data: z.output<S> }> {
    const response = await request(method, path, body, extra);
    let document: unknown;
    try {
      document = JSON.parse(await response.text());
    } catch {
      throw badResponse(url, `a ${response.status} response that is not JSON`);
    }
    if (!response.ok) {
      const error = errorBodySchema.safeParse(document);
      throw executorResponseError(url, response.status, error.success ? error.data.error : null);
    }
    const parsed = schema.safeParse(document);
    if (!parsed.success) throw badResponse(url, `a ${response.status} response of an unexpected shape`);
    return { status: response.status, data: parsed.data };
  }

  const id = encodeURIComponent;
  const executionEnvelope = z.object({ execution: executionViewSchema });

  return {
    url,

    async targets(): Promise<OfferedTarget[]> {
      return (await json('GET', '/v2/execution-targets', z.object({ targets: z.array(offeredTargetSchema) }))).data.targets;
    },

    /**
     * `GET /readyz`: whether new executions are admitted now and, when not, why (`reason`, the
     * directory of a `disk_full`, the address of an engine that does not answer). Reasons, paths
     * and addresses are kept only when they are plain tokens / paths / grpc URLs.
     */
    async readiness(): Promise<ExecutorReadiness> {
      const response = await request('GET', '/readyz');
      let document: unknown;
      try {
        document = JSON.parse(await response.text());
      } catch {
        throw badResponse(url, `a ${response.status} /readyz response that is not JSON`);
      }
      const parsed = readinessSchema.safeParse(document);
      if (!parsed.success || (response.status !== 200 && response.status !== 503)) throw badResponse(url, `an unexpected /readyz answer (${response.status})`);
      if (response.status === 200) return { ready: true };
      const { reason, path, address } = parsed.data;
      return {
        ready: false,
        reason: reason !== undefined && SAFE_CODE.test(reason) ? reason : 'unknown',
        ...(path !== undefined && SAFE_ABSOLUTE_PATH.test(path) ? { path } : {}),
        ...(address !== undefined && SAFE_ENGINE_ADDRESS.test(address) ? { address } : {}),
      };
    },

    /** `POST /v2/executions`: 201 a new execution, 200 the replay of an identical request. */
    async submit(body: unknown): Promise<{ replay: boolean; execution: ExecutionView }> {
      const answer = await json('POST', '/v2/executions', executionEnvelope, body);
      return { replay: answer.status === 200, execution: answer.data.execution };
    },

    /** `GET /v1/reconciliation/executions` (reconciliation capability): executions awaiting a human. */
    async reconciliations(): Promise<ReconciliationEntry[]> {
      return (await json('GET', '/v1/reconciliation/executions', z.object({ executions: z.array(reconciliationEntrySchema) }))).data.executions;
    },

    /** `POST /v1/reconciliation/executions/{id}/resolve` (reconciliation capability). */
    async resolveReconciliation(executionId: string, body: { resolution: 'settle'; images_billed?: number; note: string } | { resolution: 'release'; note: string }): Promise<ReconciliationResolved> {
      return (await json('POST', `/v1/reconciliation/executions/${id(executionId)}/resolve`, reconciliationResolvedSchema, body)).data;
    },

    /**
     * `GET /v1/executions/{id}`; with `wait`, a long-poll: answered as soon as the state or phase
     * differs from `wait.state` / `wait.phase`, or after `wait.seconds` (docs/executor.md). A read:
     * aborting it through `signal` is always safe.
     */
    async execution(executionId: string, wait?: { readonly seconds: number; readonly state: string; readonly phase: string | null; readonly signal?: AbortSignal }): Promise<ExecutionView> {
      if (wait === undefined) return (await json('GET', `/v1/executions/${id(executionId)}`, executionEnvelope)).data.execution;
      const query = new URLSearchParams({ wait_seconds: String(wait.seconds), state: wait.state, phase: wait.phase ?? '' });
      const extra = { waitMs: wait.seconds * 1000, ...(wait.signal === undefined ? {} : { signal: wait.signal }) };
      return (await json('GET', `/v1/executions/${id(executionId)}?${query.toString()}`, executionEnvelope, undefined, extra)).data.execution;
    },

    /** `GET /v1/executions`: newest first, one page (`next_before` continues it). */
    async executions(filter: { readonly state?: string | undefined; readonly limit?: number | undefined; readonly before?: string | undefined } = {}): Promise<ExecutionPage> {
      const query = new URLSearchParams();
      if (filter.state !== undefined) query.set('state', filter.state);
      if (filter.limit !== undefined) query.set('limit', String(filter.limit));
      if (filter.before !== undefined) query.set('before', filter.before);
      const search = query.size === 0 ? '' : `?${query.toString()}`;
      return (await json('GET', `/v1/executions${search}`, executionPageSchema)).data;
    },

    /** `GET /v1/executions/{id}` with everything an operator's detail view shows. */
    async executionDetail(executionId: string): Promise<ExecutionDetail> {
      return (await json('GET', `/v1/executions/${id(executionId)}`, z.object({ execution: executionDetailSchema }))).data.execution;
    },

    async artifacts(executionId: string): Promise<ArtifactView[]> {
      const schema = z.object({ artifacts: z.array(artifactViewSchema) });
      return (await json('GET', `/v1/executions/${id(executionId)}/artifacts`, schema)).data.artifacts;
    },

    /** The bytes of one artifact, from the `content_path` the listing gave (a path on this executor only). */
    async content(executionId: string, artifact: ArtifactView): Promise<Buffer> {
      const expected = `/v1/executions/${id(executionId)}/artifacts/${id(artifact.artifact_id)}/content`;
      if (artifact.content_path !== expected) throw badResponse(url, 'an artifact listing whose content path is not this execution\'s');
      if (artifact.size_bytes > BigInt(maxArtifactBytes)) throw badResponse(url, `an artifact larger than ${maxArtifactBytes} bytes`);
      const response = await request('GET', expected);
      if (!response.ok) {
        let document: unknown = null;
        try {
          document = JSON.parse(await response.text());
        } catch {
          // not an error body
        }
        const error = errorBodySchema.safeParse(document);
        throw executorResponseError(url, response.status, error.success ? error.data.error : null);
      }
      try {
        return Buffer.from(await response.arrayBuffer());
      } catch (error) {
        throw unreachable(url, error, timeoutMs);
      }
    },
  };
}
