import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import type { z } from 'zod';
import { visit } from 'jsonc-parser';
import { duplicateKeyIssues } from '../config/duplicate-keys.js';
import { jsonDepthIssue } from '../config/json-depth.js';
import { toFieldIssues } from '../config/zod-issues.js';
import { hasSecretShapedText } from '../config/schema-parts.js';
import { SECRET_TEXT_REASON } from '../domain/secret-text.js';
import { bigintAsString } from '../domain/canonical-json.js';
import { ApiError } from './api-error.js';
import { limitConnections } from './connection-limits.js';
import { createRejectionSummariser, isRejection, systemSummaryTiming, type RejectionKey, type RejectionSummaryTiming } from './rejection-summariser.js';

/** Largest JSON body any lexec route accepts. */
export const MAX_BODY_BYTES = 64 * 1024;

export interface JsonServerOptions {
  readonly logger: FastifyBaseLogger;
  /** Whether a finished request is routine and so not logged (spec §6 rule 4). */
  readonly isRoutine?: (request: FastifyRequest, reply: FastifyReply) => boolean;
  /**
   * The app's own refusals (domain errors of its use cases) as HTTP answers; null for anything
   * else. The one place an app gives its domain errors their statuses, used by the one handler.
   */
  readonly mapError?: (error: unknown) => ApiError | null;
  /**
   * How repeated identical rejections are collapsed (rejection-summariser.ts): serve uses the
   * system clock and REJECTION_SUMMARY_INTERVAL_MS; tests pass a fake clock or a short interval.
   */
  readonly rejectionSummary?: RejectionSummaryTiming;
  /**
   * The certificate and key (PEM) to serve HTTPS with (`http.tls`, read by server-tls.ts);
   * absent: plain HTTP, which the configuration allows on loopback only.
   */
  readonly tls?: { readonly cert: string; readonly key: string };
}

/**
 * A Fastify instance with lexec's HTTP conventions: JSON bodies only (415 otherwise), a body
 * limit (413), bigint amounts serialised as decimal strings, `{"error":{…}}` bodies that never
 * echo input, one error handler, and one structured log line per request unless routine —
 * repeated identical rejections (4xx) collapsed into a summary line per interval, and the
 * connection limits of every lexec server (connection-limits.ts). It never listens; only a
 * `serve` command does.
 */
export function createJsonServer({ logger, isRoutine, mapError, rejectionSummary, tls }: JsonServerOptions): FastifyInstance {
  const rejections = createRejectionSummariser({
    event: 'http_rejections_repeated',
    timing: rejectionSummary ?? systemSummaryTiming(),
    write: (summary) => {
      logger.warn(summary);
    },
  });
  /** The one `http_request` line of an answer, unless it repeats a rejection of its interval. */
  const logAnswer = (request: FastifyRequest, route: string, status: number, error: ApiError | undefined, durationMs: number) => {
    // Chosen by the server only: the method (the HTTP parser admits known ones only), the
    // route template (never the URL), the status and the error's stable code and reason.
    const key: RejectionKey = {
      method: request.method,
      route,
      status,
      ...(error === undefined ? {} : { code: error.code }),
      ...(error?.reasonCode === undefined ? {} : { reason_code: error.reasonCode }),
    };
    if (isRejection(status) && rejections.observe(key) === 'counted') return;
    request.log.info({ event: 'http_request', ...key, duration_ms: Math.round(durationMs) });
  };
  // Fastify types an HTTPS instance apart; every lexec route and hook is the same over both.
  const app = Fastify({
    ...(tls === undefined ? {} : { https: { cert: tls.cert, key: tls.key } }),
    loggerInstance: logger,
    // Fastify's own request lines would log URLs; lexec logs one line per request itself.
    logController: new LogController({ disableRequestLogging: true }),
    bodyLimit: MAX_BODY_BYTES,
    return503OnClosing: true,
    // Errors of the router, before any route or hook: a URL that cannot be decoded (`/%`).
    // Fastify's own answer would quote the URL back, and no onResponse hook would log it.
    frameworkErrors: (error, request, reply) => {
      const apiError = error.code === 'FST_ERR_BAD_URL' ? new ApiError(400, 'invalid_request', { reasonCode: 'malformed_url' }) : new ApiError(500, 'internal_error');
      if (apiError.status === 500) request.log.error({ event: 'internal_error', route: 'unmatched', error_name: error.name });
      // Typed for a route's generics; no route is known yet here.
      void (reply as FastifyReply).code(apiError.status).send(apiError.toBody());
      logAnswer(request, 'unmatched', apiError.status, apiError, 0);
    },
  });
  // Idle and half-sent connections are shed, so they cannot starve /readyz (connection-limits.ts).
  limitConnections(app.server, {
    log: (event) => {
      logger.warn(event);
    },
  });
  // JSON only: without this, Fastify would accept text/plain bodies as strings.
  app.removeContentTypeParser('text/plain');
  // Nesting deeper than MAX_JSON_DEPTH is refused first (400 invalid_request / nesting_too_deep,
  // the path of the first too-deep value in `fields`): the duplicate-key scan below recurses.
  // A key twice in one object is refused (400 invalid_request / duplicate_keys, the paths in
  // `fields`), as the configuration loader does: JSON.parse would silently keep the last one.
  const parseJson = app.getDefaultJsonParser('error', 'error');
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
    const text = typeof body === 'string' ? body : body.toString('utf8');
    const tooDeep = jsonDepthIssue(text);
    if (tooDeep !== null) {
      done(new ApiError(400, 'invalid_request', { reasonCode: 'nesting_too_deep', fields: [tooDeep.path] }), undefined);
      return;
    }
    const duplicates = text.includes('"') ? duplicateKeyIssues(text, visit) : [];
    if (duplicates.length > 0) {
      done(new ApiError(400, 'invalid_request', { reasonCode: 'duplicate_keys', fields: duplicates.map((issue) => issue.path) }), undefined);
      return;
    }
    // Typed as possibly async by Fastify; the default JSON parser answers through `done`.
    void parseJson(request, text, done);
  });
  app.setReplySerializer((payload) => JSON.stringify(payload, bigintAsString));

  // The error each request was answered with, for its log line and its rejection key.
  const answeredWith = new WeakMap<FastifyRequest, ApiError>();
  app.addHook('onClose', (_instance, done) => {
    rejections.close();
    done();
  });

  app.setNotFoundHandler((request, reply) => {
    const notFound = new ApiError(404, 'not_found');
    answeredWith.set(request, notFound);
    void reply.code(404).send(notFound.toBody());
  });

  app.setErrorHandler((error: Error & { code?: string; statusCode?: number }, request, reply) => {
    let apiError: ApiError;
    const mapped = error instanceof ApiError ? error : (mapError?.(error) ?? null);
    if (mapped !== null) apiError = mapped;
    else if (error.code === 'FST_ERR_CTP_BODY_TOO_LARGE') apiError = new ApiError(413, 'payload_too_large');
    else if (error.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE' || error.code === 'FST_ERR_CTP_INVALID_CONTENT_LENGTH')
      apiError = new ApiError(415, 'unsupported_media_type', { reasonCode: 'application_json_required' });
    else if (error.code === 'FST_ERR_CTP_EMPTY_JSON_BODY') apiError = new ApiError(400, 'invalid_request', { reasonCode: 'empty_body' });
    else if (error.statusCode === 400 && (error instanceof SyntaxError || error.code === 'FST_ERR_CTP_INVALID_JSON_BODY'))
      apiError = new ApiError(400, 'invalid_request', { reasonCode: 'malformed_json' });
    else {
      apiError = new ApiError(500, 'internal_error');
      // Our own errors carry no submitted values; the route template, not the URL, is logged.
      request.log.error({ event: 'internal_error', route: request.routeOptions.url ?? 'unmatched', error_name: error.name, error_message: error.message });
    }
    answeredWith.set(request, apiError);
    if (apiError.retryAfterSeconds !== undefined) void reply.header('retry-after', String(apiError.retryAfterSeconds));
    void reply.code(apiError.status).send(apiError.toBody());
  });

  app.addHook('onResponse', async (request, reply) => {
    if (isRoutine?.(request, reply)) return;
    logAnswer(request, request.routeOptions.url ?? 'unmatched', reply.statusCode, answeredWith.get(request), reply.elapsedTime);
  });

  return app;
}

/**
 * Validates a request part with a zod schema; a failure is 400 `invalid_request` listing the
 * field paths (under `prefix`), never the values; free text refused for a secret's shape adds
 * the reason code `secret_shaped_text`.
 */
export function parseInput<S extends z.ZodType>(schema: S, input: unknown, prefix?: string): z.output<S> {
  const parsed = schema.safeParse(input ?? undefined, { reportInput: true });
  if (parsed.success) return parsed.data;
  const base = prefix === undefined ? [] : [prefix];
  const fields = [...new Set(toFieldIssues(parsed.error.issues, base).map((issue) => issue.path))];
  throw new ApiError(400, 'invalid_request', { fields, ...(hasSecretShapedText(parsed.error.issues) ? { reasonCode: SECRET_TEXT_REASON } : {}) });
}

/**
 * A request header as the client sent it, for a schema: its one value, or — sent on several lines
 * — the list of them, which a schema for one value refuses with the header's path. (Node joins
 * repeated lines of most headers with ", ", so two Idempotency-Keys would pass as one key, "a, b".)
 */
export function headerAsSent(request: FastifyRequest, name: string): string | string[] | undefined {
  const sent = request.raw.headersDistinct[name];
  return sent === undefined || sent.length > 1 ? sent : sent[0];
}
