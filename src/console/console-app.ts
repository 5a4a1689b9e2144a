import type { FastifyBaseLogger, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { UserError } from '../errors.js';
import { resolutionBody } from '../executor/reconciliation.js';
import { EXECUTION_STATES } from '../executor/domain/execution-states.js';
import { ApiError } from '../http/api-error.js';
import { createJsonServer, parseInput } from '../http/json-server.js';
import type { ConsoleAssets } from './console-assets.js';
import { CONSOLE_VIEWS, consolePage, loginPage, signedOutPage, type ConsoleView } from './console-pages.js';
import { secretsEqual, SESSION_COOKIE, type ConsoleSession, type ConsoleSessions } from './console-sessions.js';
import type { ConsoleStack } from './console-stack.js';

/*
 * The console's HTTP server (docs/console.md): HTML shells, one script and one stylesheet, and
 * JSON endpoints the script polls. Built here, never listening (serve-console.ts listens).
 *
 * Every request passes, in order: the Host check (exactly the console's own 127.0.0.1:PORT, so a
 * DNS-rebound name cannot reach it), then for a POST the Origin check (the console's own origin,
 * or `Sec-Fetch-Site: same-origin` when a browser sends no Origin), then — except for the login
 * page, its script, the stylesheet and the login exchange — the session cookie, and for a POST
 * the session's CSRF token in `x-lexec-csrf`. Every answer carries a strict Content-Security-
 * Policy, nosniff, no-referrer and no-store.
 */

export interface ConsoleAppDependencies {
  readonly stack: ConsoleStack;
  readonly sessions: ConsoleSessions;
  readonly assets: ConsoleAssets;
  readonly logger: FastifyBaseLogger;
  /** The console's own origin (`http://127.0.0.1:PORT`) once it listens; null before. */
  readonly origin: () => string | null;
}

const SECURITY_HEADERS = {
  'content-security-policy': "default-src 'self'; img-src 'self' data:; script-src 'self'; style-src 'self'; connect-src 'self'; frame-ancestors 'none'; form-action 'self'; base-uri 'none'",
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'x-frame-options': 'DENY',
  'cross-origin-opener-policy': 'same-origin',
  'cross-origin-resource-policy': 'same-origin',
  'cache-control': 'no-store',
} as const;

/** Paths a browser without a session may fetch: the login page and what it needs. */
const PUBLIC_PATHS = new Set(['/login', '/assets/login.js', '/assets/console.css', '/api/login']);
/** Image types the console passes on as images; anything else is offered as a download. */
const IMAGE_TYPES = new Set(['image/png', 'image/jpeg', 'image/webp']);

const executionId = z.string().regex(/^exe_[0-9a-f]{32}$/, 'must be an execution id');
const executionParams = z.strictObject({ execution_id: executionId });
const artifactParams = executionParams.extend({ artifact_id: z.string().regex(/^art_[0-9a-f-]{36}$/, 'must be an artifact id') });
const tokenParams = z.strictObject({ token_id: z.uuid({ error: 'must be a UUID' }) });
const listQuery = z.strictObject({
  state: z.enum(EXECUTION_STATES, { error: `must be one of ${EXECUTION_STATES.join(', ')}` }).optional(),
  before: executionId.optional(),
});
const loginBody = z.strictObject({ token: z.string().max(200) });
const decisionBody = z.strictObject({ reason: z.string().max(500, 'must be at most 500 characters').optional() });

const SAFE_CODE = /^[a-z0-9_]{1,60}$/;
const UNAVAILABLE = new Set(['stack_not_running', 'handoff_missing', 'handoff_invalid', 'handoff_credential_invalid', 'ledger_unreachable', 'executor_unreachable', 'executor_not_ready', 'secret_file_missing']);

/**
 * A refusal of the stack's services as the console's answer: a status and the service's stable
 * code as reason, never its message (which names service URLs); field paths, never values.
 */
export function consoleError(error: unknown): ApiError | null {
  if (!(error instanceof UserError)) return null;
  const reason = SAFE_CODE.test(error.code) ? { reasonCode: error.code } : {};
  const fields = error.issues.map((issue) => issue.path).filter((path) => /^[A-Za-z0-9_.[\]-]{1,160}$/.test(path));
  if (UNAVAILABLE.has(error.code) || error.code.startsWith('profile_')) return new ApiError(503, 'stack_unavailable', { ...reason, retryable: true });
  if (error.code.endsWith('_not_found')) return new ApiError(404, 'not_found', reason);
  if (error.code.endsWith('_conflict')) return new ApiError(409, 'conflict', reason);
  if (error.code.endsWith('_invalid_request')) return new ApiError(400, 'invalid_request', { ...reason, fields });
  return new ApiError(502, 'stack_refused', reason);
}

/** The value of one cookie in a Cookie header (no library: one name, base64url values). */
export function cookieValue(header: string | undefined, name: string): string | undefined {
  for (const part of (header ?? '').split(';')) {
    const [key, ...value] = part.trim().split('=');
    if (key === name) return value.join('=');
  }
  return undefined;
}

export function buildConsoleApp(deps: ConsoleAppDependencies): FastifyInstance {
  const app = createJsonServer({ logger: deps.logger, mapError: consoleError });
  const sessions = new WeakMap<FastifyRequest, ConsoleSession>();
  const sessionOf = (request: FastifyRequest): ConsoleSession => {
    const session = sessions.get(request);
    if (session === undefined) throw new ApiError(401, 'unauthorized');
    return session;
  };

  app.addHook('onSend', (_request, reply, payload, done) => {
    // An image's bytes never change (content-addressed): it may be kept, privately, so a poll
    // never reloads a thumbnail. Everything else is no-store.
    const cacheable = reply.hasHeader('cache-control');
    void reply.headers(cacheable ? { ...SECURITY_HEADERS, 'cache-control': reply.getHeader('cache-control') } : SECURITY_HEADERS);
    done(null, payload);
  });

  app.addHook('onRequest', async (request, reply) => {
    const origin = deps.origin();
    if (origin === null || request.headers.host !== new URL(origin).host) throw new ApiError(421, 'misdirected_request', { reasonCode: 'wrong_host' });
    const path = request.url.split('?')[0] ?? '';
    if (request.method !== 'GET' && request.method !== 'HEAD') {
      const sameOrigin = request.headers.origin === undefined ? request.headers['sec-fetch-site'] === 'same-origin' : request.headers.origin === origin;
      if (!sameOrigin) throw new ApiError(403, 'forbidden', { reasonCode: 'cross_site_request' });
    }
    if (PUBLIC_PATHS.has(path)) return;
    const session = deps.sessions.session(cookieValue(request.headers.cookie, SESSION_COOKIE));
    if (session === null) {
      if (path.startsWith('/api/') || request.method !== 'GET') throw new ApiError(401, 'unauthorized');
      return reply.code(401).type('text/html; charset=utf-8').send(signedOutPage());
    }
    if (request.method !== 'GET' && request.method !== 'HEAD') {
      const sent = request.headers['x-lexec-csrf'];
      if (typeof sent !== 'string' || !secretsEqual(sent, session.csrfToken)) throw new ApiError(403, 'forbidden', { reasonCode: 'csrf_token_invalid' });
    }
    sessions.set(request, session);
    return undefined;
  });

  const html = (reply: FastifyReply, page: string) => reply.type('text/html; charset=utf-8').send(page);
  const asset = (path: string, type: string, body: () => string) => {
    app.get(path, (_request, reply) => reply.type(type).send(body()));
  };
  asset('/assets/console.js', 'text/javascript; charset=utf-8', () => deps.assets.script);
  asset('/assets/login.js', 'text/javascript; charset=utf-8', () => deps.assets.loginScript);
  asset('/assets/console.css', 'text/css; charset=utf-8', () => deps.assets.style);

  app.get('/login', (_request, reply) => html(reply, loginPage()));
  app.post('/api/login', (request, reply) => {
    const session = deps.sessions.login(parseInput(loginBody, request.body).token);
    if (session === null) throw new ApiError(401, 'unauthorized', { reasonCode: 'login_token_invalid' });
    void reply.header('set-cookie', `${SESSION_COOKIE}=${session.id}; HttpOnly; SameSite=Strict; Path=/`);
    return { signed_in: true };
  });
  app.post('/api/logout', (request, reply) => {
    deps.sessions.logout(cookieValue(request.headers.cookie, SESSION_COOKIE) ?? '');
    void reply.header('set-cookie', `${SESSION_COOKIE}=; HttpOnly; SameSite=Strict; Path=/; Max-Age=0`);
    return { signed_in: false };
  });

  const page = (path: string, view: ConsoleView) => {
    app.get(path, (request, reply) => html(reply, consolePage(view, sessionOf(request).csrfToken, null)));
  };
  for (const view of CONSOLE_VIEWS) page(view === 'overview' ? '/' : `/${view}`, view);
  app.get('/executions/:execution_id', (request, reply) => {
    const params = parseInput(executionParams, request.params);
    return html(reply, consolePage('execution', sessionOf(request).csrfToken, params.execution_id));
  });

  app.get('/api/overview', () => deps.stack.overview());
  app.get('/api/executions', (request) => deps.stack.executions(parseInput(listQuery, request.query)));
  app.get('/api/executions/:execution_id', (request) => deps.stack.execution(parseInput(executionParams, request.params).execution_id));
  app.get('/api/executions/:execution_id/artifacts/:artifact_id', async (request, reply) => {
    const params = parseInput(artifactParams, request.params);
    const artifact = await deps.stack.artifact(params.execution_id, params.artifact_id);
    if (artifact === null) throw new ApiError(404, 'not_found');
    if (!IMAGE_TYPES.has(artifact.mediaType)) void reply.type('application/octet-stream').header('content-disposition', 'attachment');
    else void reply.type(artifact.mediaType).header('cache-control', 'private, max-age=3600, immutable');
    return reply.send(artifact.bytes);
  });
  app.get('/api/approvals', () => deps.stack.approvals());
  for (const decision of ['approve', 'deny'] as const) {
    app.post(`/api/approvals/:token_id/${decision}`, (request) => {
      const { token_id: tokenId } = parseInput(tokenParams, request.params);
      return deps.stack.decide(tokenId, decision, parseInput(decisionBody, request.body ?? {}).reason);
    });
  }
  app.get('/api/reconciliations', () => deps.stack.reconciliations());
  app.post('/api/reconciliations/:execution_id/resolve', (request) => {
    const { execution_id: id } = parseInput(executionParams, request.params);
    return deps.stack.resolve(id, parseInput(resolutionBody, request.body));
  });
  app.get('/api/agents', () => deps.stack.agents());

  return app;
}
