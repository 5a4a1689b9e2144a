import { z } from 'zod';
import type { Send } from './ledger-call.js';

/* The ledger client's calls for executor-host enrolment (docs/deployment.md "Enrolment"), over its `send`. */

const enrolmentSchema = z.object({
  enrolment_id: z.string(),
  host_name: z.string(),
  agent_name: z.string(),
  status: z.enum(['open', 'redeemed', 'revoked', 'expired']),
  issued_at: z.string(),
  expires_at: z.string(),
  redeemed_at: z.string().nullable(),
  revoked_at: z.string().nullable(),
  agent_id: z.string().nullable(),
  executor_credential_id: z.string().nullable(),
  agent_credential_id: z.string().nullable(),
});
export type LedgerEnrolment = z.output<typeof enrolmentSchema>;

const issuedSchema = z.object({ enrolment: enrolmentSchema, token: z.string().regex(/^lexec_enrolment_[A-Za-z0-9_-]{43}$/) });
const listSchema = z.object({ enrolments: z.array(enrolmentSchema) });
const revocationSchema = z.object({ enrolment: enrolmentSchema, changed: z.boolean() });
const redemptionSchema = z.object({
  redemption: z.object({
    enrolment_id: z.string(),
    host_name: z.string(),
    agent: z.object({ agent_id: z.string(), name: z.string() }).loose(),
    executor_credential_id: z.string(),
    agent_credential_id: z.string(),
  }),
});
export type LedgerRedemption = z.output<typeof redemptionSchema>['redemption'];

/** What a ledger says it is (`GET /version`, no credential needed): the lineage checked before enrolment. */
export const ledgerVersionSchema = z.object({
  product_version: z.string(),
  contract_version: z.string(),
  commit: z.string(),
  build_kind: z.enum(['release', 'development']),
});
export type LedgerVersion = z.output<typeof ledgerVersionSchema>;

const id = encodeURIComponent;

export function enrolmentCalls(send: Send) {
  return {
    /** A new one-time enrolment token (admin): `POST /enrolments`. The token is in this answer only. */
    async issueEnrolment(request: { hostName: string; agentName: string | null; ttlMinutes: number }) {
      const body = { host_name: request.hostName, ttl_minutes: request.ttlMinutes, ...(request.agentName === null ? {} : { agent_name: request.agentName }) };
      return send({ method: 'POST', path: '/enrolments', body, needs: ['admin'], subject: 'enrolment', schema: issuedSchema });
    },

    async listEnrolments(): Promise<LedgerEnrolment[]> {
      return (await send({ method: 'GET', path: '/enrolments', needs: ['admin'], subject: 'enrolment', schema: listSchema })).enrolments;
    },

    async revokeEnrolment(enrolmentId: string) {
      return send({ method: 'POST', path: `/enrolments/${id(enrolmentId)}/revoke`, body: {}, needs: ['admin'], subject: 'enrolment', schema: revocationSchema });
    },

    /** Redeems the token this client presents (an enrolment token, not a capability): `POST /enrolments/redeem`. */
    async redeemEnrolment(request: { agentName: string; executorDigestSha256: string; agentDigestSha256: string }): Promise<LedgerRedemption> {
      const body = { agent_name: request.agentName, executor_digest_sha256: request.executorDigestSha256, agent_digest_sha256: request.agentDigestSha256 };
      return (await send({ method: 'POST', path: '/enrolments/redeem', body, needs: [], subject: 'enrolment', schema: redemptionSchema })).redemption;
    },

    async version(): Promise<LedgerVersion> {
      return send({ method: 'GET', path: '/version', needs: [], subject: 'enrolment', schema: ledgerVersionSchema });
    },
  };
}
