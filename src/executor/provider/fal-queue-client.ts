import { appIdOf } from '../../provider/fal-app-id.js';
import http from 'node:http';
import https from 'node:https';
import { z } from 'zod';

/*
 * One adapter for the sandbox and the live provider: the fal queue protocol (ARCHITECTURE.md
 * "Provider protocol"). The distinction that decides money: a submission that failed before a
 * connection existed was provably never transmitted; anything later may have reached the
 * provider and is ambiguous.
 */

/** The submission provably never left this process (no connection was established). */
export class NotTransmitted extends Error {
  constructor(readonly detail: string) {
    super(`not transmitted: ${detail}`);
    this.name = 'NotTransmitted';
  }
}

/**
 * The provider may have received the request; what happened is unknown. When the provider did
 * answer with a request id (an acceptance refused for its polling host or URL shape), the id is
 * kept here: it is what an operator searches the provider's records by.
 */
export class TransmissionAmbiguous extends Error {
  constructor(
    readonly detail: string,
    readonly receivedRequestId: string | null = null,
  ) {
    super(`ambiguous: ${detail}`);
    this.name = 'TransmissionAmbiguous';
  }
}

/**
 * The provider answered, but not as the protocol says (foreign host, mismatched id, bad shape).
 * An answer naming another request keeps that id (`receivedRequestId`) for the evidence.
 */
export class ProviderProtocolError extends Error {
  constructor(
    readonly detail: string,
    readonly receivedRequestId: string | null = null,
  ) {
    super(`protocol: ${detail}`);
    this.name = 'ProviderProtocolError';
  }
}

/** The provider could not be asked right now (connection, timeout, 5xx) while reading. */
export class ProviderUnavailable extends Error {
  constructor(
    readonly detail: string,
    /** The provider's Retry-After, in ms, when it sent one. */
    readonly retryAfterMs: number | null = null,
  ) {
    super(`unavailable: ${detail}`);
    this.name = 'ProviderUnavailable';
  }
}

export interface ProviderEndpoint {
  /** Where submissions go: the sandbox's base URL, or the live queue origin. */
  readonly submitBase: string;
  /** Sent as `Authorization: Key <key>`. */
  readonly apiKey: string;
  /** Origins (`scheme://host[:port]`) polling URLs may point at. */
  readonly pollingOrigins: readonly string[];
  /** Origins media URLs may point at. */
  readonly mediaOrigins: readonly string[];
  readonly timeoutMs?: number;
}

/** The checkpoint of a submitted operation: enough to poll it again after a restart. */
export interface SubmittedOperation {
  readonly requestId: string;
  /** The provider's operation path, `<model>/requests/<request_id>` on the polling origin. */
  readonly operationId: string;
  /** The validated polling origin. */
  readonly pollingOrigin: string;
}

const SAFE_ID = /^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$/;

/** A request id the provider's answer carries, when it is one (never anything else of the body). */
function receivedRequestId(document: unknown): string | null {
  if (typeof document !== 'object' || document === null) return null;
  const id = (document as { request_id?: unknown }).request_id;
  return typeof id === 'string' && SAFE_ID.test(id) ? id : null;
}
const MAX_JSON_BYTES = 1024 * 1024;
const MAX_MEDIA_BYTES = 32 * 1024 * 1024;

const submitAnswer = z.object({ request_id: z.string().regex(SAFE_ID), status_url: z.string(), response_url: z.string() });
const statusAnswer = z.object({
  status: z.enum(['IN_QUEUE', 'IN_PROGRESS', 'COMPLETED']),
  request_id: z.string().optional(),
  error: z.unknown().optional(),
  queue_position: z.number().int().min(0).optional().catch(undefined),
});
const resultAnswer = z.object({
  images: z.array(z.object({ url: z.string(), width: z.number().int().positive().optional(), height: z.number().int().positive().optional(), content_type: z.string().optional() })),
  request_id: z.string().optional(),
});

/** A Retry-After header as milliseconds from now: delta-seconds or an HTTP date; null otherwise. */
export function retryAfterMs(header: string | string[] | undefined, now = Date.now()): number | null {
  if (typeof header !== 'string') return null;
  const value = header.trim();
  if (/^\d{1,7}$/.test(value)) return Number(value) * 1000;
  const at = Date.parse(value);
  return Number.isNaN(at) || !/[a-z]/i.test(value) ? null : Math.max(0, at - now);
}

interface Answer {
  readonly status: number;
  readonly body: Buffer;
  readonly contentType: string;
  /** `x-fal-request-id`: the request an answer is for (fal's result bodies do not say it). */
  readonly requestIdHeader: string | null;
  /** `retry-after`, in ms (delta-seconds or an HTTP date); null when absent or unreadable. */
  readonly retryAfterMs: number | null;
}

function originOf(value: string): string | null {
  try {
    return new URL(value).origin;
  } catch {
    return null;
  }
}

export type FalQueueClient = ReturnType<typeof createFalQueueClient>;

export function createFalQueueClient(endpoint: ProviderEndpoint) {
  const agents = { http: new http.Agent({ keepAlive: true }), https: new https.Agent({ keepAlive: true }) };
  const timeoutMs = endpoint.timeoutMs ?? 30_000;

  /**
   * One HTTP exchange; `connected` tells whether any byte could have reached the peer. `fresh`
   * sends it on a connection of its own, closed after the answer, never on a kept-alive socket.
   */
  function exchange(method: string, url: string, body: string | undefined, limit: number, fresh = false): Promise<Answer> {
    return new Promise((resolve, reject) => {
      const secure = url.startsWith('https:');
      let connected = false;
      const headers: Record<string, string> = { authorization: `Key ${endpoint.apiKey}`, accept: 'application/json' };
      if (body !== undefined) {
        headers['content-type'] = 'application/json';
        headers['content-length'] = String(Buffer.byteLength(body));
      }
      if (fresh) headers.connection = 'close';
      const agent = fresh ? false : secure ? agents.https : agents.http;
      const request = (secure ? https : http).request(url, { method, headers, agent }, (response) => {
        const chunks: Buffer[] = [];
        let size = 0;
        response.on('data', (chunk: Buffer) => {
          size += chunk.length;
          if (size > limit) request.destroy(new Error('answer too large'));
          else chunks.push(chunk);
        });
        response.on('end', () => {
          const header = response.headers['x-fal-request-id'];
          resolve({
            status: response.statusCode ?? 0,
            body: Buffer.concat(chunks),
            contentType: response.headers['content-type'] ?? '',
            requestIdHeader: typeof header === 'string' ? header : null,
            retryAfterMs: retryAfterMs(response.headers['retry-after']),
          });
        });
        response.on('error', (error) => {
          reject(Object.assign(error, { connected: true }));
        });
      });
      request.on('socket', (socket) => {
        // A reused keep-alive socket is already connected: bytes go out at once. Only a socket
        // still connecting gets a listener (it fires once, on this request): listeners added to
        // a kept-alive socket would never fire and pile up with every request it carries.
        if (!socket.connecting) {
          connected = true;
          return;
        }
        // TCP connected is counted as "could have reached the provider" for TLS too: the safe side.
        socket.once('connect', () => {
          connected = true;
        });
      });
      request.setTimeout(timeoutMs, () => request.destroy(new Error('timeout')));
      request.on('error', (error) => {
        reject(Object.assign(error, { connected }));
      });
      request.end(body);
    });
  }

  function parseJson(answer: Answer): unknown {
    try {
      return JSON.parse(answer.body.toString('utf8'));
    } catch {
      return undefined;
    }
  }

  async function read(url: string, limit = MAX_JSON_BYTES): Promise<Answer> {
    try {
      const answer = await exchange('GET', url, undefined, limit);
      if (answer.status >= 500 || answer.status === 429) throw new ProviderUnavailable(`HTTP ${answer.status}`, answer.retryAfterMs);
      return answer;
    } catch (error) {
      if (error instanceof ProviderUnavailable) throw error;
      throw new ProviderUnavailable(error instanceof Error && error.message === 'timeout' ? 'timeout' : 'connection failed');
    }
  }

  function operationUrl(operation: SubmittedOperation, suffix: string): string {
    return `${operation.pollingOrigin}/${operation.operationId}${suffix}`;
  }

  return {
    /**
     * Sends exactly one submission. Throws NotTransmitted when no connection was made,
     * TransmissionAmbiguous for anything that may have reached the provider without a valid
     * acceptance. The answer's URLs must be on an allowed polling origin, in the protocol's shape.
     */
    async submit(model: string, input: { prompt: string; image_size: string; num_images: number; seed?: number }): Promise<SubmittedOperation> {
      let answer: Answer;
      try {
        // On a connection of its own: a kept-alive socket the provider closed while it sat idle
        // fails the write with a reset that cannot be told from one after the provider took the
        // job — a submission that never left would be parked as ambiguous (money held for a
        // human). On a fresh connection, a failure after it connected is truly ambiguous.
        answer = await exchange('POST', `${endpoint.submitBase.replace(/\/+$/, '')}/${model}`, JSON.stringify(input), MAX_JSON_BYTES, true);
      } catch (error) {
        const connected = (error as { connected?: boolean }).connected === true;
        const detail = error instanceof Error && error.message === 'timeout' ? 'timeout' : 'connection failed';
        throw connected ? new TransmissionAmbiguous(detail) : new NotTransmitted(detail);
      }
      const document = parseJson(answer);
      const received = receivedRequestId(document);
      if (answer.status < 200 || answer.status >= 300) throw new TransmissionAmbiguous(`HTTP ${answer.status}`, received);
      const parsed = submitAnswer.safeParse(document);
      if (!parsed.success) throw new TransmissionAmbiguous('invalid acceptance', received);
      const { request_id: requestId, status_url: statusUrl, response_url: responseUrl } = parsed.data;
      const pollingOrigin = originOf(statusUrl);
      if (pollingOrigin === null || !endpoint.pollingOrigins.includes(pollingOrigin) || originOf(responseUrl) !== pollingOrigin) {
        throw new TransmissionAmbiguous('polling host not allowed', requestId);
      }
      // fal's status and result URLs name the app (`{owner}/{alias}`), not the model's sub-path;
      // the full model id is accepted too (what the sandbox answered before it followed fal).
      const operationId = [`${appIdOf(model)}/requests/${requestId}`, `${model}/requests/${requestId}`].find(
        (candidate) => statusUrl === `${pollingOrigin}/${candidate}/status` && responseUrl === `${pollingOrigin}/${candidate}`,
      );
      if (operationId === undefined) throw new TransmissionAmbiguous('polling URLs not in the protocol shape', requestId);
      return { requestId, operationId, pollingOrigin };
    },

    /** One status poll of the checkpointed operation. */
    async status(operation: SubmittedOperation): Promise<{ status: 'IN_QUEUE' | 'IN_PROGRESS' | 'COMPLETED'; failed: boolean; queuePosition: number | null }> {
      const answer = await read(operationUrl(operation, '/status'));
      const parsed = statusAnswer.safeParse(parseJson(answer));
      if (answer.status >= 400 || !parsed.success) throw new ProviderProtocolError(`status answer HTTP ${answer.status}`);
      if (parsed.data.request_id !== undefined && parsed.data.request_id !== operation.requestId) throw new ProviderProtocolError('mismatched request id', receivedRequestId(parsed.data));
      return { status: parsed.data.status, failed: parsed.data.error !== undefined && parsed.data.error !== null, queuePosition: parsed.data.queue_position ?? null };
    },

    /** The result of a completed operation: image references on allowed media origins. */
    async result(operation: SubmittedOperation): Promise<{ url: string; width?: number | undefined; height?: number | undefined }[]> {
      const answer = await read(operationUrl(operation, ''));
      const parsed = resultAnswer.safeParse(parseJson(answer));
      if (answer.status >= 400 || !parsed.success) throw new ProviderProtocolError(`result answer HTTP ${answer.status}`);
      if (parsed.data.request_id !== undefined && parsed.data.request_id !== operation.requestId) throw new ProviderProtocolError('mismatched request id', receivedRequestId(parsed.data));
      // fal names the request a result is for in `x-fal-request-id`: a result for another request
      // is never stored or billed as this one's.
      if (answer.requestIdHeader !== null && answer.requestIdHeader !== operation.requestId) {
        throw new ProviderProtocolError('mismatched request id', receivedRequestId({ request_id: answer.requestIdHeader }));
      }
      for (const image of parsed.data.images) {
        const origin = originOf(image.url);
        if (origin === null || !endpoint.mediaOrigins.includes(origin)) throw new ProviderProtocolError('media host not allowed');
      }
      return parsed.data.images.map((image) => ({ url: image.url, width: image.width, height: image.height }));
    },

    /** The bytes of one image, from an allowed media origin. */
    async media(url: string): Promise<{ bytes: Buffer; mediaType: string }> {
      const origin = originOf(url);
      if (origin === null || !endpoint.mediaOrigins.includes(origin)) throw new ProviderProtocolError('media host not allowed');
      const answer = await read(url, MAX_MEDIA_BYTES);
      if (answer.status !== 200) throw new ProviderProtocolError(`media answer HTTP ${answer.status}`);
      const mediaType = answer.contentType.split(';')[0]?.trim() ?? '';
      if (!['image/png', 'image/jpeg', 'image/webp'].includes(mediaType)) throw new ProviderProtocolError('media type not an image');
      return { bytes: answer.body, mediaType };
    },

    close(): void {
      agents.http.destroy();
      agents.https.destroy();
    },
  };
}

/** The fixed live queue origin and media origins (live accepts nothing else). */
export const LIVE_QUEUE_ORIGIN = 'https://queue.fal.run';
export const LIVE_MEDIA_ORIGINS = ['https://fal.media', 'https://v2.fal.media', 'https://v3.fal.media'] as const;
