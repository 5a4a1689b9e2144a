import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import type { BuildInfo } from '../../build-info.js';
import { createRejectionSummariser, isRejection, systemSummaryTiming, type RejectionSummaryTiming } from '../../http/rejection-summariser.js';
import { cancel, media, result, status, submit, type QueueContext } from './fal-queue-routes.js';
import { handleControl } from './sandbox-control.js';
import type { FaultBook } from './sandbox-faults.js';
import { sendJson } from './sandbox-http.js';
import type { SandboxState } from './sandbox-state.js';

export interface SandboxAppOptions {
  /** The sandbox's own origin (`http://127.0.0.1:7420`): every URL it hands out starts with it. */
  readonly origin: string;
  /** Milliseconds from submit to COMPLETED (IN_QUEUE for the first half, IN_PROGRESS after). */
  readonly completeAfterMs: number;
  /** Models that take no `seed`: a submission with one is refused (422 extra_forbidden). */
  readonly seedlessModels?: readonly string[];
  readonly state: SandboxState;
  readonly faults: FaultBook;
  readonly logger: Logger;
  readonly buildInfo: BuildInfo;
  readonly now?: () => number;
  readonly newRequestId?: () => string;
  /** How repeated rejections are collapsed in the log (default: the system clock, a 60 s interval). */
  readonly rejectionSummary?: RejectionSummaryTiming;
}

export interface SandboxApp {
  /** The `request` listener of a `node:http` server. */
  readonly handle: (request: IncomingMessage, response: ServerResponse) => void;
  /**
   * For shutdown: ends every withheld answer (hang, latency) by closing its connection and
   * resolves once every request under way has finished and been logged, and the pending
   * summaries of repeated rejections are written.
   */
  close(): Promise<void>;
}

const UUID = '[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}';
const MODEL = '[a-z0-9._-]+(?:/[a-z0-9._-]+){0,7}';
const QUEUE_REQUEST = new RegExp(`^/(${MODEL})/requests/(${UUID})(/status|/cancel)?$`);
const MEDIA = new RegExp(`^/media/(${UUID})/([0-3])\\.png$`);
const MODEL_PATH = new RegExp(`^/(${MODEL})$`);

/** Model ids are fal endpoint ids; segments that would clash with routing are refused. */
function isModelId(model: string): boolean {
  return !model.startsWith('__sandbox') && !model.startsWith('media/') && model.split('/').every((part) => part !== '.' && part !== '..' && part !== 'requests');
}

/** Routes whose routine successes are not logged (readiness probes poll them). */
const ROUTINE = new Set(['GET /__sandbox/health', 'GET /__sandbox/version']);

/**
 * Builds the sandbox provider: the fal queue protocol subset (fal-queue-routes.ts) plus the
 * loopback control API under `/__sandbox/`. It never listens; `serveSandbox` does.
 */
export function buildSandboxApp(options: SandboxAppOptions): SandboxApp {
  const { state, faults, logger } = options;
  const parked = new Set<() => void>();
  const inFlight = new Set<Promise<void>>();
  // Repeated identical rejections (4xx) are counted and summarised, as on lexec's Fastify servers.
  const rejections = createRejectionSummariser({
    event: 'http_rejections_repeated',
    timing: options.rejectionSummary ?? systemSummaryTiming(),
    write: (summary) => {
      logger.warn(summary);
    },
  });

  const withhold = (response: ServerResponse, ms: number | null): Promise<boolean> =>
    new Promise((resolve) => {
      const finish = (answered: boolean) => {
        if (timer !== undefined) clearTimeout(timer);
        parked.delete(abort);
        response.off('close', gone);
        resolve(answered);
      };
      const abort = () => {
        finish(false);
        response.socket?.destroy();
      };
      const gone = () => {
        finish(false);
      };
      const timer = ms === null ? undefined : setTimeout(() => {
        finish(true);
      }, ms);
      parked.add(abort);
      response.once('close', gone);
    });

  const ctx: QueueContext = {
    origin: options.origin,
    completeAfterMs: options.completeAfterMs,
    seedlessModels: new Set(options.seedlessModels ?? []),
    state,
    faults,
    logger,
    now: options.now ?? Date.now,
    newRequestId: options.newRequestId ?? randomUUID,
    pause: (response, ms) => (ms <= 0 ? Promise.resolve(true) : withhold(response, ms)),
    hang: (response) => void withhold(response, null),
  };

  /** Dispatches one request; returns the route template that is logged (never the URL). */
  async function route(request: IncomingMessage, response: ServerResponse): Promise<string> {
    const method = request.method ?? 'GET';
    const url = new URL(request.url ?? '/', 'http://sandbox.invalid');
    const path = url.pathname;
    if (path.startsWith('/__sandbox/')) return handleControl(options, method, path, request, response);
    const mediaMatch = MEDIA.exec(path);
    if (mediaMatch !== null && method === 'GET') {
      await media(ctx, response, mediaMatch[1] ?? '', Number(mediaMatch[2]));
      return 'GET /media/{request_id}/{index}.png';
    }
    const queueMatch = QUEUE_REQUEST.exec(path);
    if (queueMatch !== null && isModelId(queueMatch[1] ?? '')) {
      const [, model = '', requestId = '', suffix = ''] = queueMatch;
      if (suffix === '/status' && method === 'GET') await status(ctx, request, response, model, requestId, url.searchParams.get('logs') === '1');
      else if (suffix === '' && method === 'GET') await result(ctx, request, response, model, requestId);
      else if (suffix === '/cancel' && method === 'PUT') await cancel(ctx, request, response, model, requestId);
      else sendJson(response, 405, { detail: 'Method Not Allowed' });
      return `${method} /{model}/requests/{request_id}${suffix}`;
    }
    const modelMatch = MODEL_PATH.exec(path);
    if (modelMatch !== null && isModelId(modelMatch[1] ?? '')) {
      if (method === 'POST') await submit(ctx, request, response, modelMatch[1] ?? '');
      else sendJson(response, 405, { detail: 'Method Not Allowed' });
      return `${method} /{model}`;
    }
    sendJson(response, 404, { detail: 'Not Found' });
    return 'unmatched';
  }

  return {
    handle(request, response) {
      const started = performance.now();
      let settle = () => {};
      const done = new Promise<void>((resolve) => {
        settle = resolve;
      });
      inFlight.add(done);
      void done.then(() => inFlight.delete(done));
      route(request, response).then(
        (template) => {
          const log = () => {
            settle();
            const answered = response.writableFinished;
            if (answered && response.statusCode < 400 && ROUTINE.has(template)) return;
            const method = request.method ?? 'GET';
            if (answered && isRejection(response.statusCode) && rejections.observe({ method, route: template, status: response.statusCode }) === 'counted') return;
            logger.info({
              event: 'http_request',
              method,
              route: template,
              status: answered ? response.statusCode : null,
              answered,
              duration_ms: Math.round(performance.now() - started),
            });
          };
          // A withheld answer is logged when its connection finally closes.
          if (response.writableFinished || response.destroyed) log();
          else response.once('close', log);
        },
        (error: unknown) => {
          settle();
          if (request.destroyed) {
            // The client went away mid-request (e.g. while sending its body): nothing to answer.
            logger.info({ event: 'http_request', method: request.method, route: 'unfinished', status: null, answered: false });
            return;
          }
          logger.error({ event: 'internal_error', error_name: error instanceof Error ? error.name : 'unknown' });
          if (!response.headersSent && !response.destroyed) sendJson(response, 500, { detail: 'Internal Server Error' });
          else response.destroy();
        },
      );
    },
    async close() {
      for (const abort of [...parked]) abort();
      await Promise.all([...inFlight]);
      rejections.close();
    },
  };
}
