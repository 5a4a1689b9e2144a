import type { FastifyInstance } from 'fastify';
import { ApiError } from '../../http/api-error.js';
import { parseInput } from '../../http/json-server.js';
import { credentialGuard } from '../../http/require-credential.js';
import type { CredentialLifecycle } from '../credential-lifecycle.js';
import type { ExecutorEnrolments } from '../executor-enrolments.js';
import { enrolmentIssueBody, enrolmentParams, enrolmentRedeemBody } from '../wire/enrolment-requests.js';
import { revokeBody } from '../wire/requests.js';

/**
 * The enrolment routes of the ledger API (docs/deployment.md "Enrolment"), added to the app
 * buildLedgerApp built (compose-ledger.ts), before it listens; each admin route's credential is
 * checked in its onRequest hook, as the app's own routes are.
 */
export function registerEnrolmentRoutes(app: FastifyInstance, credentials: CredentialLifecycle, enrolments: ExecutorEnrolments): void {
  const auth = credentialGuard((token) => credentials.authenticate(token));
  // Enrolment of executor hosts (docs/deployment.md "Enrolment"): the operator issues, lists and
  // revokes one-time tokens; a host redeems its token once, presenting it as the bearer, with the
  // digests of the capabilities it generated. The token is answered once, at issue, and never again.
  app.post('/enrolments', { onRequest: auth.requires('admin') }, async (request, reply) => {
    const body = parseInput(enrolmentIssueBody, request.body);
    const issued = enrolments.issue({ hostName: body.host_name, agentName: body.agent_name ?? body.host_name, ttlMinutes: body.ttl_minutes }, auth.principal(request));
    return reply.code(201).header('cache-control', 'no-store').send(issued);
  });

  app.get('/enrolments', { onRequest: auth.requires('admin') }, () => ({ enrolments: enrolments.list() }));

  app.post('/enrolments/:enrolment_id/revoke', { onRequest: auth.requires('admin') }, (request) => {
    const { enrolment_id: enrolmentId } = parseInput(enrolmentParams, request.params);
    parseInput(revokeBody, request.body ?? {});
    return enrolments.revoke(enrolmentId, auth.principal(request));
  });

  app.post('/enrolments/redeem', async (request, reply) => {
    const header = request.headers.authorization;
    const token = typeof header === 'string' && header.startsWith('Bearer ') ? header.slice('Bearer '.length).trim() : '';
    const body = parseInput(enrolmentRedeemBody, request.body);
    const redemption = enrolments.redeem(token, {
      agentName: body.agent_name,
      executorDigest: Buffer.from(body.executor_digest_sha256, 'hex'),
      agentDigest: Buffer.from(body.agent_digest_sha256, 'hex'),
    });
    if (redemption === null) throw new ApiError(401, 'unauthorized');
    return reply.code(201).send({ redemption });
  });

}
