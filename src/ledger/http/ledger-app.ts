import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import { z } from 'zod';
import type { BuildInfo } from '../../build-info.js';
import { ApiError } from '../../http/api-error.js';
import { toApiError } from '../../http/refusal-status.js';
import { createJsonServer, headerAsSent, parseInput, type JsonServerOptions } from '../../http/json-server.js';
import { credentialGuard } from '../../http/require-credential.js';
import { registerMetricsRoute } from '../../http/metrics-route.js';
import { CREDENTIAL_KINDS } from '../../credentials/capability.js';
import type { RejectionSummaryTiming } from '../../http/rejection-summariser.js';
import { AUTHORIZATION_STATUSES } from '../authorization-rules.js';
import type { ExecutorClaims } from '../executor-claims.js';
import type { CredentialLifecycle } from '../credential-lifecycle.js';
import type { LedgerAdmin } from '../ledger-admin.js';
import { spendPolicySchema, type LedgerContractLevel } from '../ledger-config.js';
import type { LedgerService, Receipt } from '../ledger-service.js';
import type { LedgerSpending } from '../wire/answers.js';
import {
  agentBody,
  agentId as agentIdSchema,
  auditQuery,
  eventsQuery,
  authorizationRequestBody,
  claimBody,
  claimsQuery,
  credentialBody,
  credentialId,
  credentialsQuery,
  decisionBody,
  idempotencyKeyHeader,
  installationBudgetBody,
  legacyCentsReceipt,
  policyPrecondition,
  preciseReceipt,
  reconciliationBody,
  releaseBody,
  resolveRecordBody,
  resumeBody,
  revokeBody,
  rotateBody,
  settleBody,
  spendReportQuery,
  suspendBody,
  webhookBody,
  webhookDeliveriesQuery,
  webhookSinkId,
  webhooksQuery,
} from '../wire/requests.js';
import type { WebhookSinks } from '../webhooks/webhook-sinks.js';

export interface LedgerAppDependencies {
  /** What `GET /metrics` reports (ledger-metrics.ts). */
  readonly metrics: Registry;
  readonly service: LedgerService;
  readonly admin: LedgerAdmin;
  /** Credentials: authentication, list, revoke, rotate. */
  readonly credentials: CredentialLifecycle;
  /** An executor's own claims (the orphan-claim sweep's listing). */
  readonly claims: ExecutorClaims;
  /** The operator's webhook sinks (docs/ledger.md "Webhooks"). */
  readonly webhooks: WebhookSinks;
  readonly buildInfo: BuildInfo;
  readonly contractLevel: LedgerContractLevel;
  readonly logger: Logger;
  /** The directory of the ledger's database when its filesystem is full (issue 26), else null; /health answers 503 `disk_full` then. */
  readonly diskFull?: () => Promise<{ readonly path: string } | null>;
  /** How repeated rejections are collapsed in the log (default: the system clock, a 60 s interval). */
  readonly rejectionSummary?: RejectionSummaryTiming;
  readonly tls?: JsonServerOptions['tls'];
}

const tokenParams = z.strictObject({ token_id: z.uuid({ error: 'must be a UUID' }) });
const agentParams = z.strictObject({ agent_id: agentIdSchema });
const recordParams = z.strictObject({ record_id: z.string().regex(/^rec_[0-9a-f-]{36}$/, 'must be a record id') });
const listQuery = z.strictObject({
  agent_id: z.string().max(64).optional(),
  status: z.enum(AUTHORIZATION_STATUSES).optional(),
  limit: z.coerce.number().int().min(1).max(500).default(100),
});

function isProbe(request: FastifyRequest): boolean {
  const query = request.query as Record<string, unknown> | undefined;
  return request.routeOptions.url === '/agents' && typeof query?.operational_probe === 'string' && query.operational_probe !== '';
}

/** A receipt is precise (micro-units) or legacy (whole cents); its own fields say which. */
function parseReceipt(raw: Record<string, unknown>, prefix: string): Receipt {
  if ('amount_units' in raw) return { shape: 'precise', body: parseInput(preciseReceipt, raw, prefix) };
  if ('amount_cents' in raw) return { shape: 'legacy_cents', body: parseInput(legacyCentsReceipt, raw, prefix) };
  throw new ApiError(400, 'invalid_request', { reasonCode: 'invalid_receipt', fields: [`${prefix}.amount_units`] });
}

/** Builds the ledger HTTP API (docs/ledger.md). It never listens; `ledger serve` does. */
export function buildLedgerApp(deps: LedgerAppDependencies): FastifyInstance {
  const { service, admin, credentials } = deps;
  const app = createJsonServer({
    mapError: toApiError,
    logger: deps.logger,
    // Spec §6 rule 4: routine successes of health, version, the marked probe and scrapes are not logged.
    isRoutine: (request, reply) =>
      reply.statusCode < 400 && (['/health', '/version', '/metrics'].includes(request.routeOptions.url ?? '') || isProbe(request)),
    ...(deps.rejectionSummary === undefined ? {} : { rejectionSummary: deps.rejectionSummary }),
    ...(deps.tls === undefined ? {} : { tls: deps.tls }),
  });
  // Each route's credential is checked in its onRequest hook, before its body is read or parsed.
  const auth = credentialGuard((token) => credentials.authenticate(token));

  app.get('/health', async (_request, reply) => {
    // A ledger that cannot write cannot hold or settle: the launcher's probe and `stack status` say so.
    const full = (await deps.diskFull?.()) ?? null;
    if (full === null) return { status: 'ok' };
    return reply.code(503).send({ status: 'not_ready', reason: 'disk_full', path: full.path });
  });
  app.get('/version', () => ({ ...deps.buildInfo, contract_level: deps.contractLevel }));

  // Prometheus scrapes (docs/metrics.md): loopback callers with a metrics capability only.
  registerMetricsRoute(app, deps.metrics, auth.requires('metrics'));

  // The executor's readiness credential check uses this route with ?operational_probe=<marker>;
  // the marker changes only logging (spec §4.6).
  app.get('/agents', { onRequest: auth.requires('admin', 'executor') }, (request) => {
    parseInput(z.strictObject({ operational_probe: z.string().max(64).optional() }), request.query);
    return { agents: admin.listAgents() };
  });

  // Every operator action below is in the audit trail, in its own transaction, with the
  // authenticated principal as who did it (store/audit-store.ts); GET /audit reads it.
  app.post('/agents', { onRequest: auth.requires('admin') }, async (request, reply) => {
    const body = parseInput(agentBody, request.body);
    return reply.code(201).send({ agent: admin.addAgent(body.name, auth.principal(request)) });
  });

  app.get('/agents/:agent_id/policy', { onRequest: auth.requires('admin') }, (request) => {
    const { agent_id: agentId } = parseInput(agentParams, request.params);
    return { policy: admin.policy(agentId) };
  });

  // With `If-Match: <version>`, only if the policy is still at that version (412
  // `policy_version_mismatch` with the current version otherwise); without it, unconditional.
  app.put('/agents/:agent_id/policy', { onRequest: auth.requires('admin') }, (request) => {
    const { agent_id: agentId } = parseInput(agentParams, request.params);
    // Only the one header is handed to the schema: nothing else of the request reaches an issue.
    const precondition = parseInput(policyPrecondition, { 'if-match': request.headers['if-match'] });
    const policy = parseInput(spendPolicySchema, request.body);
    return { policy: admin.setPolicy(agentId, policy, auth.principal(request), precondition['if-match'] ?? null) };
  });

  // The installation-wide budget across all agents (docs/ledger.md "Budgets"), versioned like a
  // policy: with `If-Match: <version>` only if still at it (412 `budget_version_mismatch`).
  app.get('/budgets/installation', { onRequest: auth.requires('admin') }, () => service.installationBudget());

  app.put('/budgets/installation', { onRequest: auth.requires('admin') }, (request) => {
    const precondition = parseInput(policyPrecondition, { 'if-match': request.headers['if-match'] });
    const body = parseInput(installationBudgetBody, request.body);
    return service.setInstallationBudget(body, auth.principal(request), precondition['if-match'] ?? null);
  });

  // The operator's kill switch (docs/ledger.md "Suspending an agent"); both idempotent.
  app.post('/agents/:agent_id/suspend', { onRequest: auth.requires('admin') }, (request) => {
    const { agent_id: agentId } = parseInput(agentParams, request.params);
    const body = parseInput(suspendBody, request.body ?? {});
    return service.suspendAgent(agentId, body.reason ?? null, auth.principal(request));
  });

  app.post('/agents/:agent_id/resume', { onRequest: auth.requires('admin') }, (request) => {
    const { agent_id: agentId } = parseInput(agentParams, request.params);
    parseInput(resumeBody, request.body ?? {});
    return service.resumeAgent(agentId, auth.principal(request));
  });

  const credentialParams = z.strictObject({ credential_id: credentialId });

  app.get('/credentials', { onRequest: auth.requires('admin') }, (request) => {
    const query = parseInput(credentialsQuery, request.query);
    return { credentials: credentials.list({ kind: query.kind ?? null, agentId: query.agent_id ?? null }) };
  });

  // Whoever calls: the credential it presented (how a holder finds its own id to rotate it).
  app.get('/credentials/self', { onRequest: auth.requires(...CREDENTIAL_KINDS) }, (request) => {
    return { credential: credentials.show(auth.principal(request).credential_id) };
  });

  app.get('/credentials/:credential_id', { onRequest: auth.requires('admin') }, (request) => {
    const id = parseInput(credentialParams, request.params).credential_id;
    return { credential: credentials.show(id) };
  });

  app.put('/credentials/:credential_id', { onRequest: auth.requires('admin') }, async (request, reply) => {
    const id = parseInput(credentialParams, request.params).credential_id;
    const body = parseInput(credentialBody, request.body);
    const registered = credentials.register({
      credentialId: id,
      kind: body.kind,
      agentId: body.agent_id ?? null,
      digest: Buffer.from(body.digest_sha256, 'hex'),
      holderName: body.holder_name ?? null,
      actor: auth.principal(request),
    });
    const { credential, outcome } = registered;
    return reply
      .code(outcome === 'created' ? 201 : 200)
      .send({ credential: { credential_id: credential.credential_id, kind: credential.kind, agent_id: credential.agent_id, holder_name: credential.holder_name }, outcome });
  });

  // Refused from the very next request (nothing caches a credential); never the last admin one.
  app.post('/credentials/:credential_id/revoke', { onRequest: auth.requires('admin') }, (request) => {
    const id = parseInput(credentialParams, request.params).credential_id;
    parseInput(revokeBody, request.body ?? {});
    return credentials.revoke(id, auth.principal(request));
  });

  app.post('/credentials/:credential_id/rotate', { onRequest: auth.requires('admin') }, async (request, reply) => {
    const id = parseInput(credentialParams, request.params).credential_id;
    const body = parseInput(rotateBody, request.body);
    const rotation = credentials.rotate(id, { newCredentialId: body.new_credential_id, digest: Buffer.from(body.digest_sha256, 'hex'), graceSeconds: body.grace_seconds }, auth.principal(request));
    return reply.code(rotation.outcome === 'created' ? 201 : 200).send(rotation);
  });

  app.post('/authorizations', { onRequest: auth.requires('agent') }, async (request, reply) => {
    const principal = auth.principal(request);
    // Only the one header is handed to the schema, as sent (twice: refused), as for If-Match; the key itself is never echoed.
    const header = parseInput(idempotencyKeyHeader, { 'idempotency-key': headerAsSent(request, 'idempotency-key') });
    const body = parseInput(authorizationRequestBody, request.body);
    const { authorization, replayed } = service.requestAuthorization(principal.agent_id ?? '', body, header['idempotency-key'] ?? null);
    // A replay answers the open authorization the key opened (docs/ledger.md "Idempotent requests").
    if (replayed) void reply.header('Idempotent-Replayed', 'true');
    return reply.code(replayed ? 200 : 201).send({ authorization, replayed });
  });

  app.get('/authorizations', { onRequest: auth.requires('admin') }, (request) => {
    const query = parseInput(listQuery, request.query);
    return { authorizations: service.list(query) };
  });

  app.get('/authorizations/:token_id', { onRequest: auth.requires('admin', 'approver', 'agent') }, (request) => {
    const principal = auth.principal(request);
    const { token_id: tokenId } = parseInput(tokenParams, request.params);
    const authorization = service.show(tokenId);
    // An agent sees only its own authorizations; another's looks like one that does not exist.
    if (principal.kind === 'agent' && authorization.agent_id !== principal.agent_id) throw new ApiError(404, 'not_found');
    // The agent asking after its own request: a client still waits on it (best effort, never fails the read).
    if (principal.kind === 'agent') service.noteClientSeen(authorization);
    return { authorization };
  });

  // An agent's own policy and standing (the agent-protocol client's `spending` tool).
  app.get('/agent/spending', { onRequest: auth.requires('agent') }, (request) => {
    const principal = auth.principal(request);
    const agentId = principal.agent_id ?? '';
    const policy = admin.policy(agentId);
    return { spending: { ...service.spending(agentId, policy), policy } satisfies LedgerSpending };
  });

  // Any agent's policy and standing, for the operator (the console's agents view): the same
  // answer as /agent/spending, asked with the admin capability.
  app.get('/agents/:agent_id/spending', { onRequest: auth.requires('admin') }, (request) => {
    const { agent_id: agentId } = parseInput(agentParams, request.params);
    const policy = admin.policy(agentId);
    return { spending: { ...service.spending(agentId, policy), policy } satisfies LedgerSpending };
  });

  app.get('/approvals', { onRequest: auth.requires('approver') }, () => {
    return { authorizations: service.pendingApprovals() };
  });

  for (const [verb, decision] of [['approve', 'approved'], ['deny', 'denied']] as const) {
    app.post(`/authorizations/:token_id/${verb}`, { onRequest: auth.requires('approver') }, (request) => {
      const principal = auth.principal(request);
      const { token_id: tokenId } = parseInput(tokenParams, request.params);
      const body = parseInput(decisionBody, request.body ?? {});
      return { authorization: service.decide(tokenId, decision, principal, body.reason) };
    });
  }

  app.get('/executor/authorizations/:token_id', { onRequest: auth.requires('executor') }, (request) => {
    const { token_id: tokenId } = parseInput(tokenParams, request.params);
    return { authorization: service.resolve(tokenId) };
  });

  app.post('/executor/authorizations/:token_id/claim', { onRequest: auth.requires('executor') }, (request) => {
    const principal = auth.principal(request);
    const { token_id: tokenId } = parseInput(tokenParams, request.params);
    const body = parseInput(claimBody, request.body);
    return service.claim(tokenId, body.execution_id, body.require, principal.credential_id);
  });

  // The calling executor's own claims older than an age: it releases those it never turned into
  // an execution (docs/ledger.md "Orphan claims"). Another credential's claims are never listed.
  app.get('/executor/claims', { onRequest: auth.requires('executor') }, (request) => {
    const principal = auth.principal(request);
    const query = parseInput(claimsQuery, request.query);
    return deps.claims.claimedBy(principal.credential_id, { olderThanMs: query.older_than_seconds * 1000, limit: query.limit, after: query.after ?? null });
  });

  app.post('/executor/authorizations/:token_id/settle', { onRequest: auth.requires('executor') }, (request) => {
    const { token_id: tokenId } = parseInput(tokenParams, request.params);
    const body = parseInput(settleBody, request.body);
    return service.settle(tokenId, body.execution_id, parseReceipt(body.receipt, 'receipt'));
  });

  app.post('/executor/authorizations/:token_id/release', { onRequest: auth.requires('executor') }, (request) => {
    const principal = auth.principal(request);
    const { token_id: tokenId } = parseInput(tokenParams, request.params);
    const body = parseInput(releaseBody, request.body);
    return service.release(tokenId, body.execution_id, body.reason, principal.credential_id);
  });

  app.post('/executor/authorizations/:token_id/reconciliation', { onRequest: auth.requires('executor') }, async (request, reply) => {
    const { token_id: tokenId } = parseInput(tokenParams, request.params);
    const body = parseInput(reconciliationBody, request.body);
    const result = service.openReconciliation(tokenId, body.execution_id, body.reason, body.evidence);
    return reply.code(result.replayed ? 200 : 201).send(result);
  });

  app.get('/reconciliation-records', { onRequest: auth.requires('reconciliation') }, (request) => {
    const { status } = parseInput(z.strictObject({ status: z.enum(['open', 'resolved']).optional() }), request.query);
    return { records: service.reconciliationRecords(status) };
  });

  app.post('/reconciliation-records/:record_id/resolve', { onRequest: auth.requires('reconciliation') }, (request) => {
    const principal = auth.principal(request);
    const { record_id: recordId } = parseInput(recordParams, request.params);
    const body = parseInput(resolveRecordBody, request.body);
    const resolution =
      body.resolution === 'settle' ? { kind: 'settle' as const, receipt: parseReceipt(body.receipt, 'receipt') } : { kind: 'release' as const, reason: body.reason };
    return service.resolveReconciliation(recordId, principal, resolution);
  });

  // The events outbox, oldest first after a cursor (docs/ledger.md "Events"): for operators and
  // approvers (the console's live view), never agents.
  // With wait_seconds, a long-poll (ledger-service.ts `waitEvents`): answered as soon as an event
  // follows the cursor, empty at the deadline, at once when the client leaves or the ledger stops.
  // A poll answered because the ledger stops closes its connection: the server, closing, has
  // already let its idle keep-alive connections go and would otherwise wait for this one.
  let closing = false;
  app.get('/events', { onRequest: auth.requires('admin', 'approver') }, async (request, reply) => {
    const query = parseInput(eventsQuery, request.query);
    const page = { after: query.after ?? 0n, agentId: query.agent_id ?? null, types: query.types ?? null, limit: query.limit };
    if (query.wait_seconds === 0) return service.events(page);
    const left = new AbortController();
    const onClose = () => {
      left.abort();
    };
    reply.raw.once('close', onClose);
    try {
      const answer = await service.waitEvents(page, query.wait_seconds * 1000, left.signal);
      if (closing) void reply.header('connection', 'close');
      return answer;
    } finally {
      reply.raw.off('close', onClose);
    }
  });
  // A stopping ledger answers its waiting long-polls first, so closing never waits out their deadlines.
  app.addHook('preClose', (done) => {
    closing = true;
    service.closeEvents();
    done();
  });

  // Webhook sinks (docs/ledger.md "Webhooks"): the operator's alone. A sink's URL is answered
  // redacted to its origin; its secret file is checked here and read at each delivery.
  app.post('/webhooks', { onRequest: auth.requires('admin') }, async (request, reply) => {
    const body = parseInput(webhookBody, request.body);
    const sink = await deps.webhooks.add({ url: body.url, secretFile: body.secret_file, events: body.events ?? null, format: body.format, fromEventId: body.from_event_id ?? null }, auth.principal(request));
    return reply.code(201).send({ sink });
  });

  app.get('/webhooks', { onRequest: auth.requires('admin') }, (request) => {
    const query = parseInput(webhooksQuery, request.query);
    return { sinks: deps.webhooks.list(query.all === 'true') };
  });

  app.get('/webhooks/deliveries', { onRequest: auth.requires('admin') }, (request) => {
    const query = parseInput(webhookDeliveriesQuery, request.query);
    return deps.webhooks.deliveries({ sinkId: query.sink_id ?? null, failed: query.failed === 'true', limit: query.limit, before: query.before ?? null, eventId: query.event_id ?? null });
  });

  // Idempotent: removing a removed sink changes nothing (`changed: false`).
  app.post('/webhooks/:sink_id/remove', { onRequest: auth.requires('admin') }, (request) => {
    const { sink_id: sinkId } = parseInput(z.strictObject({ sink_id: webhookSinkId }), request.params);
    parseInput(revokeBody, request.body ?? {});
    return deps.webhooks.remove(sinkId, auth.principal(request));
  });

  // The audit trail, oldest first; `next_after` continues it (docs/ledger.md "Audit trail").
  app.get('/audit', { onRequest: auth.requires('admin') }, (request) => {
    const query = parseInput(auditQuery, request.query);
    return service.auditTrail({ since: query.since ?? null, after: query.after ?? null, agentId: query.agent_id ?? null, limit: query.limit });
  });

  // Settled and held spend per agent, target or calendar period (docs/ledger.md "Spend reports").
  app.get('/reports/spend', { onRequest: auth.requires('admin', 'approver') }, (request) => {
    const query = parseInput(spendReportQuery, request.query);
    return { report: service.spendReport({ by: query.by, since: query.since ?? null, until: query.until ?? null, split: query.split ?? null }) };
  });

  return app;
}
