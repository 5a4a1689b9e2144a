import type { FastifyBaseLogger, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { UserError } from '../errors.js';
import { resolutionBody } from '../executor/reconciliation.js';
import { EXECUTION_STATES } from '../executor/domain/execution-states.js';
import { ApiError } from '../http/api-error.js';
import { createJsonServer, parseInput } from '../http/json-server.js';
import { assetType, CONSOLE_ASSET_FILES, type ConsoleAssets } from './console-assets.js';
import { CONSOLE_VIEWS, consolePage, loginPage, type ConsoleView } from './console-pages.js';
import { SESSION_HEADER, type ConsoleSession, type ConsoleSessions } from './console-sessions.js';
import type { ConsoleStack } from './console-stack.js';
import { LedgerAlreadyDecided, LedgerBudgetVersionMismatch, LedgerPolicyVersionMismatch } from '../ledger/client/ledger-client-errors.js';
import { DEFAULT_ALERT_PERCENTAGES } from '../ledger/budget-rules.js';
import { approverName } from '../stack-client/named-approver.js';
import { spendCsv } from '../ledger/client/spend-csv.js';
import { SPEND_GROUPINGS } from '../ledger/summarise-spend.js';
import { spendBoundText } from '../ledger/wire/requests.js';

/*
 * The console's HTTP server (docs/console.md): HTML shells, its script modules and stylesheet, and
 * JSON endpoints the script polls. Built here, never listening (serve-console.ts listens).
 *
 * Every request passes, in order: the Host check (exactly the console's own 127.0.0.1:PORT, so a
 * DNS-rebound name cannot reach it), then for a POST the Origin check (the console's own origin,
 * or `Sec-Fetch-Site: same-origin` when a browser sends no Origin), then — for every `/api/*`
 * route but the login exchange, GETs included — the session secret in `x-lexec-session`. There
 * is no cookie: cookies are not scoped to a port, so any listener on 127.0.0.1 would receive it.
 * A header a browser never adds by itself also does what a CSRF token did. Shells, script and
 * stylesheet hold no secret and no data, so they are served without a session. Every answer
 * carries a strict Content-Security-Policy, nosniff, no-referrer and no-store.
 */

export interface ConsoleAppDependencies {
  readonly stack: ConsoleStack;
  readonly sessions: ConsoleSessions;
  readonly assets: ConsoleAssets;
  readonly logger: FastifyBaseLogger;
  /** The profile the console serves, resolved once at start (every page names it). */
  readonly profile: string;
  /** The console's own origin (`http://127.0.0.1:PORT`) once it listens; null before. */
  readonly origin: () => string | null;
}

const SECURITY_HEADERS = {
  'content-security-policy': "default-src 'self'; img-src 'self' data: blob:; script-src 'self'; style-src 'self'; connect-src 'self'; frame-ancestors 'none'; form-action 'self'; base-uri 'none'",
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'x-frame-options': 'DENY',
  'cross-origin-opener-policy': 'same-origin',
  'cross-origin-resource-policy': 'same-origin',
  'cache-control': 'no-store',
} as const;

const LOGIN_PATH = '/api/login';
const viewPath = (view: (typeof CONSOLE_VIEWS)[number]) => (view === 'overview' ? '/' : `/${view}`);
/**
 * Route templates served without a session: the shells (no secret, no data), the login page, the
 * assets and the login exchange. Matched on the route Fastify chose — never on the raw URL, which
 * may spell the same route differently (`/%61pi/…`).
 */
const PUBLIC_ROUTES = new Set([...CONSOLE_VIEWS.map(viewPath), '/executions/:execution_id', '/login', ...CONSOLE_ASSET_FILES.map((name) => `/assets/${name}`), LOGIN_PATH]);
/** Image types the console passes on as images; anything else is offered as a download. */
const IMAGE_TYPES = new Set(['image/png', 'image/jpeg', 'image/webp']);

const executionId = z.string().regex(/^exe_[0-9a-f]{32}$/, 'must be an execution id');
const executionParams = z.strictObject({ execution_id: executionId });
const artifactParams = executionParams.extend({ artifact_id: z.string().regex(/^art_[0-9a-f-]{36}$/, 'must be an artifact id') });
const tokenParams = z.strictObject({ token_id: z.uuid({ error: 'must be a UUID' }) });
const agentId = z.string().regex(/^agt_[0-9a-f-]{36}$/, 'must be an agent id');
const instant = z.iso.datetime({ offset: true, error: 'must be an ISO 8601 time (2026-11-27T00:00:00Z)' });
/** The Executions view's filter and search: the executor filters by state, the console the rest (console-stack.ts). */
const listQuery = z.strictObject({
  state: z.enum(EXECUTION_STATES, { error: `must be one of ${EXECUTION_STATES.join(', ')}` }).optional(),
  before: executionId.optional(),
  agent_id: agentId.optional(),
  target_id: z.string().min(1).max(200, 'must be at most 200 characters').optional(),
  from: instant.optional(),
  until: instant.optional(),
  q: z.string().max(200, 'must be at most 200 characters').optional(),
});
const historyQuery = z.strictObject({
  outcome: z.enum(['approved', 'denied', 'expired', 'cancelled'], { error: 'must be approved, denied, expired or cancelled' }).optional(),
  agent_id: agentId.optional(),
});
const agentParams = z.strictObject({ agent_id: agentId });
/** Whole micro-units as the page sends them: digits, never a number (no float near an amount). */
const units = z.string().regex(/^[0-9]{1,19}$/, 'must be whole micro-units (digits; 1 USD = 1000000)').transform(BigInt);
/** An optional limit as the page sends it: digits set it, an empty string clears it (none), absent keeps it. */
const optionalLimit = (message: string) =>
  z
    .string()
    .regex(/^(?:[0-9]{1,19})?$/, message)
    .transform((text) => (text === '' ? null : BigInt(text)))
    .optional();
const optionalUnits = optionalLimit('must be whole micro-units (digits; 1 USD = 1000000), or empty for none');
const optionalCount = optionalLimit('must be a whole number, or empty for none');
/**
 * A policy edit from the Agents view, with the version the page showed: it changes the policy only
 * if that is still the version. The caps are always sent; velocity limits and calendar budgets may
 * be; what is not sent (alert percentages, the target allow-list) the ledger keeps as it is (a
 * policy field left out of a PUT is kept: ledger-admin.ts).
 */
const policyBody = z.strictObject({
  per_authorization_cap_units: units,
  daily_cap_units: units,
  approval_threshold_units: units,
  max_requests_per_minute: optionalCount,
  max_requests_per_hour: optionalCount,
  suspend_after_velocity_refusals: optionalCount,
  day_budget_units: optionalUnits,
  week_budget_units: optionalUnits,
  month_budget_units: optionalUnits,
  expect_version: z.string().regex(/^[1-9][0-9]{0,18}$/, 'must be the version shown (a whole number)').transform(BigInt),
});
/**
 * The installation-wide budget from the Agents view, with the version the page showed: each
 * period's budget (empty: none) and the alert percentages as typed (`50, 80, 100`; empty: the
 * ledger's default). It replaces the budget only if that is still the version.
 */
const installationBudgetBody = z.strictObject({
  day_budget_units: optionalUnits.unwrap(),
  week_budget_units: optionalUnits.unwrap(),
  month_budget_units: optionalUnits.unwrap(),
  alert_percentages: z
    .string()
    .regex(/^\s*(?:[0-9]{1,3}(?:\s*,\s*[0-9]{1,3})*)?\s*$/, 'must be whole percentages separated by commas, such as 50, 80, 100')
    .transform((text) => (text.trim() === '' ? [...DEFAULT_ALERT_PERCENTAGES] : text.split(',').map((part) => Number(part.trim())))),
  expect_version: z.string().regex(/^[1-9][0-9]{0,18}$/, 'must be the version shown (a whole number)').transform(BigInt),
});
/** The Audit view's query: a period back from now, an agent, the page after an audit id. */
const AUDIT_PERIODS = { '24h': 86_400_000, '7d': 7 * 86_400_000, '30d': 30 * 86_400_000, all: null } as const;
const auditQuery = z.strictObject({
  period: z.enum(['24h', '7d', '30d', 'all'], { error: 'must be 24h, 7d, 30d or all' }).default('24h'),
  agent_id: agentParams.shape.agent_id.optional(),
  after: z.string().regex(/^\d{1,19}$/, 'must be an audit id').optional(),
});
/** The Spend view's query, passed on to the ledger's spend report (dates are read in the ledger's time zone). */
const spendQuery = z.strictObject({
  by: z.enum(SPEND_GROUPINGS, { error: `must be one of ${SPEND_GROUPINGS.join(', ')}` }).default('day'),
  split: z.enum(['agent', 'target'], { error: 'must be agent or target' }).optional(),
  since: spendBoundText.optional(),
  until: spendBoundText.optional(),
});
const emptyBody = z.strictObject({});
/** The login exchange: the one-time token, and who signs in (the named approver the session decides as). */
const loginBody = z.strictObject({
  token: z.string().max(200),
  name: approverName,
});
const decisionBody = z.strictObject({ reason: z.string().max(500, 'must be at most 500 characters').optional() });

const SAFE_CODE = /^[a-z0-9_]{1,60}$/;
const UNAVAILABLE = new Set(['stack_not_running', 'handoff_missing', 'handoff_invalid', 'handoff_credential_invalid', 'ledger_unreachable', 'executor_unreachable', 'executor_not_ready', 'secret_file_missing']);

/**
 * A refusal of the stack's services as the console's answer: a status and the service's stable
 * code as reason, never its message (which names service URLs); field paths, never values.
 */
export function consoleError(error: unknown): ApiError | null {
  if (!(error instanceof UserError)) return null;
  // Someone changed the policy since the page showed it: nothing changed; the page says which version is current.
  if (error instanceof LedgerPolicyVersionMismatch || error instanceof LedgerBudgetVersionMismatch) {
    const code = error instanceof LedgerPolicyVersionMismatch ? 'policy_version_mismatch' : 'budget_version_mismatch';
    return new ApiError(412, code, { reasonCode: error.code, ...(error.currentVersion === null ? {} : { details: { current_version: error.currentVersion.toString() } }) });
  }
  const reason = SAFE_CODE.test(error.code) ? { reasonCode: error.code } : {};
  const fields = error.issues.map((issue) => issue.path).filter((path) => /^[A-Za-z0-9_.[\]-]{1,160}$/.test(path));
  if (UNAVAILABLE.has(error.code) || error.code.startsWith('profile_')) return new ApiError(503, 'stack_unavailable', { ...reason, retryable: true });
  // Another approver was first (or it was decided the other way): who and when, for the page to say.
  if (error instanceof LedgerAlreadyDecided) {
    const details: Record<string, string> = { decision: error.decision, decided_at: error.decidedAt };
    if (error.decidedByName !== null) details.decided_by_name = error.decidedByName;
    return new ApiError(409, 'already_decided', { reasonCode: error.code, details });
  }
  // The signed-in name's approver credential was revoked: the console does not decide as that person.
  if (error.code === 'approver_credential_revoked') return new ApiError(403, 'forbidden', reason);
  // A ledger host's console: executions and reconciliations live on the executor hosts; an
  // executor host's: approvals, agents, spend and the audit trail on the ledger host (docs/deployment.md "Roles").
  if (error.code === 'no_executor_on_host' || error.code === 'role_not_on_host') return new ApiError(404, 'not_on_this_host', reason);
  if (error.code.endsWith('_not_found')) return new ApiError(404, 'not_found', reason);
  if (error.code.endsWith('_conflict')) return new ApiError(409, 'conflict', reason);
  if (error.code.endsWith('_invalid_request')) return new ApiError(400, 'invalid_request', { ...reason, fields });
  return new ApiError(502, 'stack_refused', reason);
}

/** The session secret a request carries in `x-lexec-session`, if exactly one. */
function sessionSecret(request: FastifyRequest): string | undefined {
  const sent = request.headers[SESSION_HEADER];
  return typeof sent === 'string' ? sent : undefined;
}

export function buildConsoleApp(deps: ConsoleAppDependencies): FastifyInstance {
  const app = createJsonServer({ logger: deps.logger, mapError: consoleError });

  app.addHook('onSend', (_request, reply, payload, done) => {
    // Images too are no-store: the page fetches each once and keeps it as a blob URL.
    void reply.headers(SECURITY_HEADERS);
    done(null, payload);
  });

  const sessionOf = new WeakMap<FastifyRequest, ConsoleSession>();
  const approverName = (request: FastifyRequest): string => {
    const session = sessionOf.get(request);
    if (session === undefined) throw new Error(`route ${request.routeOptions.url ?? 'unmatched'} ran without a session`);
    return session.approverName;
  };

  /** Throws the refusal of a request that may not reach its route. */
  const admit = (request: FastifyRequest): void => {
    const origin = deps.origin();
    if (origin === null || request.headers.host !== new URL(origin).host) throw new ApiError(421, 'misdirected_request', { reasonCode: 'wrong_host' });
    if (request.method !== 'GET' && request.method !== 'HEAD') {
      const sameOrigin = request.headers.origin === undefined ? request.headers['sec-fetch-site'] === 'same-origin' : request.headers.origin === origin;
      if (!sameOrigin) throw new ApiError(403, 'forbidden', { reasonCode: 'cross_site_request' });
    }
    if (PUBLIC_ROUTES.has(request.routeOptions.url ?? '')) return;
    const secret = sessionSecret(request);
    if (secret === undefined) throw new ApiError(401, 'unauthorized', { reasonCode: 'session_missing' });
    const session = deps.sessions.use(secret);
    if (session === null) throw new ApiError(401, 'unauthorized', { reasonCode: 'session_invalid' });
    sessionOf.set(request, session);
  };
  app.addHook('onRequest', (request, _reply, done) => {
    try {
      admit(request);
      done();
    } catch (error) {
      done(error as Error);
    }
  });

  const html = (reply: FastifyReply, page: string) => reply.type('text/html; charset=utf-8').send(page);
  for (const name of CONSOLE_ASSET_FILES) {
    const body = deps.assets.files.get(name) ?? '';
    app.get(`/assets/${name}`, (_request, reply) => reply.type(assetType(name)).send(body));
  }

  app.get('/login', (_request, reply) => html(reply, loginPage()));
  // The secret goes in the body, for the page to keep in its tab's sessionStorage: no cookie.
  app.post(LOGIN_PATH, (request) => {
    const body = parseInput(loginBody, request.body);
    const secret = deps.sessions.login(body.token, body.name);
    if (secret === null) throw new ApiError(401, 'unauthorized', { reasonCode: 'login_token_invalid' });
    return { signed_in: true, session: secret };
  });
  app.post('/api/logout', (request) => {
    deps.sessions.logout(sessionSecret(request) ?? '');
    return { signed_in: false };
  });

  const page = (path: string, view: ConsoleView) => {
    app.get(path, (_request, reply) => html(reply, consolePage(view, deps.profile, null)));
  };
  for (const view of CONSOLE_VIEWS) page(viewPath(view), view);
  app.get('/executions/:execution_id', (request, reply) => {
    const params = parseInput(executionParams, request.params);
    return html(reply, consolePage('execution', deps.profile, params.execution_id));
  });

  app.get('/api/overview', () => deps.stack.overview());
  app.get('/api/executions', (request) => {
    const query = parseInput(listQuery, request.query);
    return deps.stack.executions({ state: query.state, before: query.before, agentId: query.agent_id, targetId: query.target_id, from: query.from, until: query.until, search: query.q });
  });
  app.get('/api/executions/:execution_id', (request) => deps.stack.execution(parseInput(executionParams, request.params).execution_id));
  app.get('/api/executions/:execution_id/artifacts/:artifact_id', async (request, reply) => {
    const params = parseInput(artifactParams, request.params);
    const artifact = await deps.stack.artifact(params.execution_id, params.artifact_id);
    if (artifact === null) throw new ApiError(404, 'not_found');
    if (!IMAGE_TYPES.has(artifact.mediaType)) void reply.type('application/octet-stream').header('content-disposition', 'attachment');
    else void reply.type(artifact.mediaType);
    return reply.send(artifact.bytes);
  });
  app.get('/api/approvals', () => deps.stack.approvals());
  app.get('/api/approvals/history', (request) => {
    const query = parseInput(historyQuery, request.query);
    return deps.stack.approvalHistory({ outcome: query.outcome, agentId: query.agent_id });
  });

  // The ledger's events as they happen, as Server-Sent Events (docs/console.md "Live events"):
  // read by the page with fetch (it sends the session header, which EventSource cannot). The
  // session is checked again with every message and every 15 s; a stream whose session ended is
  // closed. Each message is the follower's view (console-events.ts): events and the count of
  // requests waiting, no prompt, no capability.
  const streams = new Set<() => void>();
  app.addHook('preClose', (done) => {
    for (const end of streams) end();
    done();
  });
  app.get('/api/live', (request, reply) => {
    const secret = sessionSecret(request) ?? '';
    void reply.hijack();
    const raw = reply.raw;
    raw.writeHead(200, { ...SECURITY_HEADERS, 'content-type': 'text/event-stream; charset=utf-8' });
    raw.write(': lexec console live events\n\n');
    let unsubscribe = (): void => undefined;
    const end = (): void => {
      clearInterval(keepAlive);
      unsubscribe();
      streams.delete(end);
      raw.end();
    };
    const alive = (): boolean => {
      if (deps.sessions.use(secret) !== null) return true;
      end();
      return false;
    };
    const keepAlive = setInterval(() => {
      if (alive()) raw.write(': keep-alive\n\n');
    }, 15_000);
    streams.add(end);
    request.raw.on('close', end);
    unsubscribe = deps.stack.live.subscribe((message) => {
      if (alive()) raw.write(`event: ledger\ndata: ${JSON.stringify(message)}\n\n`);
    });
  });
  for (const decision of ['approve', 'deny'] as const) {
    app.post(`/api/approvals/:token_id/${decision}`, (request) => {
      const { token_id: tokenId } = parseInput(tokenParams, request.params);
      return deps.stack.decide(tokenId, decision, parseInput(decisionBody, request.body ?? {}).reason, approverName(request));
    });
  }
  app.get('/api/reconciliations', () => deps.stack.reconciliations());
  app.post('/api/reconciliations/:execution_id/resolve', (request) => {
    const { execution_id: id } = parseInput(executionParams, request.params);
    return deps.stack.resolve(id, parseInput(resolutionBody, request.body));
  });
  app.get('/api/agents', () => deps.stack.agents());
  app.get('/api/audit', (request) => {
    const query = parseInput(auditQuery, request.query);
    const back = AUDIT_PERIODS[query.period];
    return deps.stack.audit({ since: back === null ? null : Date.now() - back, after: query.after, agentId: query.agent_id });
  });
  // The Spend view: the ledger's spend report, and the same report as CSV (one for the chart and table, one to download).
  app.get('/api/spend', (request) => deps.stack.spend(parseInput(spendQuery, request.query)));
  app.get('/api/spend.csv', async (request, reply) => {
    const query = parseInput(spendQuery, request.query);
    const report = await deps.stack.spend(query);
    return reply.type('text/csv; charset=utf-8').header('content-disposition', `attachment; filename="lexec-spend-by-${query.by}.csv"`).send(spendCsv(report));
  });
  app.post('/api/agents/:agent_id/suspend', (request) => {
    const { agent_id: agentId } = parseInput(agentParams, request.params);
    return deps.stack.suspend(agentId, parseInput(decisionBody, request.body ?? {}).reason ?? null);
  });
  app.post('/api/agents/:agent_id/resume', (request) => {
    const { agent_id: agentId } = parseInput(agentParams, request.params);
    parseInput(emptyBody, request.body ?? {});
    return deps.stack.resume(agentId);
  });
  app.post('/api/installation-budget', (request) => {
    const { expect_version: expectVersion, ...budget } = parseInput(installationBudgetBody, request.body);
    return deps.stack.setInstallationBudget(budget, expectVersion);
  });
  app.post('/api/agents/:agent_id/policy', (request) => {
    const { agent_id: agentId } = parseInput(agentParams, request.params);
    const { expect_version: expectVersion, ...policy } = parseInput(policyBody, request.body);
    return deps.stack.setPolicy(agentId, policy, expectVersion);
  });

  return app;
}
