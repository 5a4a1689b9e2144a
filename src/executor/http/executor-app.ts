import type { FastifyBaseLogger, FastifyInstance } from 'fastify';
import type { Registry } from 'prom-client';
import { z } from 'zod';
import type { BuildInfo } from '../../build-info.js';
import { ApiError } from '../../http/api-error.js';
import { createJsonServer, parseInput } from '../../http/json-server.js';
import { credentialGuard, type AuthenticatedPrincipal } from '../../http/require-credential.js';
import { registerMetricsRoute } from '../../http/metrics-route.js';
import { createRejectionSummariser, systemSummaryTiming, type RejectionSummaryTiming } from '../../http/rejection-summariser.js';
import { ADMISSION_REJECTION_REASONS, ROUTE_VERSION, type createAdmission } from '../admission.js';
import type { ArtifactStore } from '../artifact-store.js';
import { NO_CRASH_POINTS, type CrashPoints } from '../../crash-points.js';
import { EXECUTION_PHASES, EXECUTION_STATES } from '../domain/execution-states.js';
import { ENGINE_UNREACHABLE_REASONS, READINESS_REASON_FIELDS } from '../domain/readiness-state.js';
import type { ExecutionChanges } from '../execution-changes.js';
import { artifactView, executionDetail, executionSummary } from '../execution-view.js';
import type { ProviderCatalog } from '../provider-catalog.js';
import type { Readiness } from '../readiness.js';
import type { ExecutionStore } from '../store/execution-store.js';
import { resolutionBody, type createReconciliation } from '../reconciliation.js';
import { toApiError } from '../../http/refusal-status.js';
import type { ExecutionTarget } from '../config/executor-config-schema.js';

export interface ExecutorAppDependencies {
  readonly store: ExecutionStore;
  readonly artifacts: ArtifactStore;
  readonly admission: ReturnType<typeof createAdmission>;
  readonly readiness: Readiness;
  readonly buildInfo: BuildInfo;
  readonly catalog: () => ProviderCatalog;
  readonly targets: () => readonly ExecutionTarget[];
  /**
   * Who a presented capability is: a caller or reconciliation credential the executor's credential
   * table accepts now, or null (credentials/authenticate-capability.ts). Asked on every request.
   */
  readonly authenticate: (token: string) => AuthenticatedPrincipal | null;
  readonly reconciliation: ReturnType<typeof createReconciliation>;
  /** What `GET /metrics` reports (executor-metrics.ts); null: no metrics capability configured, no route. */
  readonly metrics?: Registry | null;
  /** The workflow engine's address (a grpc:// URL, never credentials), named by `/readyz` while the engine does not answer; null: none (embedded). */
  readonly engineAddress?: string | null;
  /** Wakes the detail route's long-polls (execution-changes.ts). */
  readonly changes: ExecutionChanges;
  readonly logger: FastifyBaseLogger;
  /** How repeated rejections are collapsed in the log (default: the system clock, a 60 s interval). */
  readonly rejectionSummary?: RejectionSummaryTiming;
  /** The certificate and key to serve HTTPS with (`http.tls`, src/http/server-tls.ts); absent: plain HTTP on loopback. */
  readonly tls?: { readonly cert: string; readonly key: string };
  /** Development builds' crash points (src/crash-points.ts): one is on the artifact content route. */
  readonly crashPoints?: CrashPoints;
}

const executionParams = z.strictObject({ execution_id: z.string().regex(/^exe_[0-9a-f]{32}$/, 'must be an execution id') });

/** The longest a detail request may wait for a change. */
export const MAX_WAIT_SECONDS = 30;
/**
 * `GET /v1/executions/{id}?wait_seconds=N&state=S&phase=P`: answer as soon as the execution's
 * state or phase differs from the caller's S and P (`phase` absent or empty: none), or after N
 * seconds with what it is then. Without `wait_seconds` the route answers at once, as always.
 */
const detailQuery = z.object({
  wait_seconds: z.coerce.number().int('must be whole seconds').min(1, 'must be at least 1').max(MAX_WAIT_SECONDS, `must be at most ${MAX_WAIT_SECONDS}`).optional(),
  state: z.enum(EXECUTION_STATES, { error: `must be one of ${EXECUTION_STATES.join(', ')}` }).optional(),
  phase: z.union([z.enum(EXECUTION_PHASES, { error: `must be one of ${EXECUTION_PHASES.join(', ')}` }), z.literal('')]).optional(),
});
/** The largest page of `GET /v1/executions`. */
export const MAX_LIST_LIMIT = 100;
/** `GET /v1/executions?state=S&limit=N&before=ID`: newest first, one state or all, older than ID. */
const listQuery = z.strictObject({
  state: z.enum(EXECUTION_STATES, { error: `must be one of ${EXECUTION_STATES.join(', ')}` }).optional(),
  limit: z
    .string()
    .regex(/^[0-9]{1,3}$/, 'must be a whole number written in decimal digits')
    .transform(Number)
    .pipe(z.number().min(1, 'must be at least 1').max(MAX_LIST_LIMIT, `must be at most ${MAX_LIST_LIMIT}`))
    .default(25),
  before: z.string().regex(/^exe_[0-9a-f]{32}$/, 'must be an execution id').optional(),
});
const artifactParams = executionParams.extend({ artifact_id: z.string().regex(/^art_[0-9a-f-]{36}$/, 'must be an artifact id') });
const PUBLIC_ROUTES = new Set(['/livez', '/readyz', '/version']);
/** Routes whose successes are not logged (spec §6 rule 4): the public probes and the scrapes. */
const ROUTINE_ROUTES = new Set([...PUBLIC_ROUTES, '/metrics']);

/**
 * Writes `executor_admission_rejected` the first time, per process, that each allowlisted
 * (route version, reason) pair is refused (spec §6): field paths only, never values. Later
 * identical refusals are counted and summarised once per interval as
 * `executor_admission_rejections_repeated`, so an operator sees that they go on without one line
 * each. `close` writes the summaries still pending.
 */
function admissionRejections(logger: FastifyBaseLogger, timing: RejectionSummaryTiming) {
  const seen = new Set<string>();
  const repeated = createRejectionSummariser({
    event: 'executor_admission_rejections_repeated',
    timing,
    logFirst: false,
    write: (summary) => {
      logger.info(summary);
    },
  });
  return {
    record(error: ApiError): void {
      const reason = error.reasonCode;
      if (reason === undefined || !(ADMISSION_REJECTION_REASONS as readonly string[]).includes(reason)) return;
      const key = { route: 'create_execution', route_version: ROUTE_VERSION, status: error.status, code: error.code, reason_code: reason };
      const id = `${ROUTE_VERSION}:${reason}`;
      if (seen.has(id)) {
        repeated.observe(key);
        return;
      }
      seen.add(id);
      logger.info({ event: 'executor_admission_rejected', ...key, fields: error.fields ?? [] });
    },
    close: () => {
      repeated.close();
    },
  };
}

/** Builds the executor HTTP API (spec §4; docs/executor.md). Only `executor serve` listens. */
export function buildExecutorApp(deps: ExecutorAppDependencies): FastifyInstance {
  const app = createJsonServer({
    logger: deps.logger,
    isRoutine: (request, reply) => reply.statusCode < 400 && ROUTINE_ROUTES.has(request.routeOptions.url ?? ''),
    mapError: toApiError,
    ...(deps.rejectionSummary === undefined ? {} : { rejectionSummary: deps.rejectionSummary }),
    ...(deps.tls === undefined ? {} : { tls: deps.tls }),
  });
  // A stopping server answers its long-polls at once rather than holding shutdown for them, and
  // closes each connection after its answer: a kept-alive one would hold the stop until it idled out.
  let closing = false;
  app.addHook('preClose', (done) => {
    closing = true;
    deps.changes.close();
    done();
  });
  app.addHook('onSend', (_request, reply, payload, done) => {
    if (closing) void reply.header('connection', 'close');
    done(null, payload);
  });
  // Each route's credential is checked in its onRequest hook, before its body is read or parsed.
  const guard = credentialGuard(deps.authenticate);
  const caller = guard.requires('caller');
  const reconciler = guard.requires('reconciliation');
  const rejected = admissionRejections(deps.logger, deps.rejectionSummary ?? systemSummaryTiming());
  app.addHook('onClose', (_instance, done) => {
    rejected.close();
    done();
  });

  app.get('/livez', () => ({ status: 'ok' }));
  app.get('/readyz', async (_request, reply) => {
    if (deps.readiness.isReady()) return { status: 'ready' };
    const reason = deps.readiness.reason();
    // A reason that points at a setting names the field to fix.
    const field = READINESS_REASON_FIELDS[reason];
    // A full disk names the directory (the operator's own path; never a secret).
    const path = deps.readiness.path();
    // An engine that does not answer is named by its address (configuration, never credentials: grpcUrl refuses them).
    const address = ENGINE_UNREACHABLE_REASONS.has(reason) ? (deps.engineAddress ?? undefined) : undefined;
    return reply
      .code(503)
      .send({ status: 'not_ready', reason, ...(field === undefined ? {} : { field }), ...(path === undefined ? {} : { path }), ...(address === undefined ? {} : { address }) });
  });
  app.get('/version', () => deps.buildInfo);
  // Prometheus scrapes (docs/metrics.md): loopback callers with a metrics capability only.
  if (deps.metrics !== undefined && deps.metrics !== null) registerMetricsRoute(app, deps.metrics, guard.requires('metrics'));

  app.get('/v1/provider-catalog', { onRequest: caller }, () => {
    return deps.catalog();
  });

  app.get('/v2/execution-targets', { onRequest: caller }, () => {
    return {
      targets: deps.targets().map((target) => ({
        target_id: target.target_id,
        label: target.label ?? null,
        provider: target.provider,
        model: target.model,
        presets: target.presets.filter((preset) => target.pricing.by_image_size[preset] !== undefined),
        default_image_size: target.presets[0],
        max_image_count: target.max_image_count,
        pricing: { currency: target.pricing.currency, unit: target.pricing.unit, version: target.pricing.version, by_image_size: target.pricing.by_image_size },
      })),
    };
  });

  app.post('/v2/executions', { onRequest: caller }, async (request, reply) => {
    try {
      const admitted = await deps.admission.admit(request.body);
      return await reply.code(admitted.replayed ? 200 : 201).send({ execution: executionDetail(deps.store, admitted.execution.execution_id, admitted.execution) });
    } catch (error) {
      const refused = toApiError(error);
      if (refused !== null) rejected.record(refused);
      throw error;
    }
  });

  // Every agent's executions: an operator's view (the reconciliation capability), not an agent's —
  // an agent's caller capability reads only the executions whose ids it was given.
  app.get('/v1/executions', { onRequest: reconciler }, (request) => {
    const query = parseInput(listQuery, request.query);
    const before = query.before === undefined ? null : (deps.store.execution(query.before) ?? null);
    if (query.before !== undefined && before === null) throw new ApiError(400, 'invalid_request', { reasonCode: 'unknown_cursor', fields: ['before'] });
    const rows = deps.store.newestExecutions({ state: query.state ?? null, limit: query.limit, before });
    const last = rows.length === query.limit ? rows.at(-1) : undefined;
    return { executions: rows.map((row) => executionSummary(deps.store, row)), next_before: last?.execution_id ?? null };
  });

  app.get('/v1/executions/:execution_id', { onRequest: caller }, async (request) => {
    const { execution_id: executionId } = parseInput(executionParams, request.params);
    const query = parseInput(detailQuery, request.query);
    let execution = executionDetail(deps.store, executionId);
    if (execution === undefined) throw new ApiError(404, 'not_found');
    if (query.wait_seconds !== undefined && query.state !== undefined) {
      const seen = { state: query.state, phase: query.phase === '' ? null : (query.phase ?? null) };
      const deadline = Date.now() + query.wait_seconds * 1000;
      // A write that changed nothing the caller sees (a poll in the same phase) waits on.
      while (execution !== undefined && execution.state === seen.state && execution.phase === seen.phase && Date.now() < deadline) {
        if (!(await deps.changes.wait(executionId, deadline - Date.now()))) break;
        execution = executionDetail(deps.store, executionId);
      }
      if (execution === undefined) throw new ApiError(404, 'not_found');
    }
    return { execution };
  });

  app.get('/v1/executions/:execution_id/artifacts', { onRequest: caller }, (request) => {
    const { execution_id: executionId } = parseInput(executionParams, request.params);
    if (deps.store.execution(executionId) === undefined) throw new ApiError(404, 'not_found');
    return { execution_id: executionId, artifacts: deps.store.artifacts(executionId).map(artifactView) };
  });

  app.get('/v1/executions/:execution_id/artifacts/:artifact_id/content', { onRequest: caller }, async (request, reply) => {
    const params = parseInput(artifactParams, request.params);
    const artifact = deps.store.artifact(params.execution_id, params.artifact_id);
    if (artifact === undefined) throw new ApiError(404, 'not_found');
    (deps.crashPoints ?? NO_CRASH_POINTS).reach('api.before_artifact_content');
    return reply
      .header('content-type', artifact.media_type)
      .header('content-length', artifact.size_bytes.toString())
      .header('etag', `"sha256-${artifact.sha256}"`)
      .header('cache-control', 'private, max-age=31536000, immutable')
      .send(deps.artifacts.read(artifact.storage_key));
  });

  app.get('/v1/reconciliation/executions', { onRequest: reconciler }, () => {
    return { executions: deps.reconciliation.list() };
  });

  app.post('/v1/reconciliation/executions/:execution_id/resolve', { onRequest: reconciler }, async (request) => {
    const { execution_id: executionId } = parseInput(executionParams, request.params);
    return deps.reconciliation.resolve(executionId, parseInput(resolutionBody, request.body));
  });

  return app;
}
