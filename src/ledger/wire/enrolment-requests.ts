import { z } from 'zod';
import { DEFAULT_ENROLMENT_TTL_MINUTES, MAX_ENROLMENT_TTL_MINUTES } from '../executor-enrolments.js';

/* Request bodies of the enrolment routes (docs/deployment.md "Enrolment"). Strict: unknown fields are refused with their paths. */

/** An executor host's name: it becomes part of credential ids, so a host-name alphabet. */
export const enrolmentHostName = z
  .string({ error: 'must be a host name' })
  .regex(/^[a-z0-9][a-z0-9-]{0,62}$/, 'must be 1-63 lower-case letters, digits or - (starting with a letter or digit)');

const agentName = z.string({ error: 'must be a name' }).regex(/^[a-z0-9][a-z0-9_-]{0,63}$/, 'must be 1-64 lower-case letters, digits, _ or - (starting with a letter or digit)');
const digestSha256 = z.string({ error: 'must be a hex SHA-256 digest' }).regex(/^[0-9a-f]{64}$/, 'must be 64 lower-case hex digits');

/** `POST /enrolments`: the host, the agent it spends as (default: the host's name), how long the token is good for. */
export const enrolmentIssueBody = z.strictObject({
  host_name: enrolmentHostName,
  agent_name: agentName.optional(),
  ttl_minutes: z
    .number({ error: 'must be a whole number of minutes' })
    .int('must be a whole number of minutes')
    .min(1, 'must be at least 1')
    .max(MAX_ENROLMENT_TTL_MINUTES, `must be at most ${MAX_ENROLMENT_TTL_MINUTES} (7 days)`)
    .default(DEFAULT_ENROLMENT_TTL_MINUTES),
});

/** `POST /enrolments/redeem`: the host's agent name and the digests of the capabilities it generated and keeps. */
export const enrolmentRedeemBody = z.strictObject({
  agent_name: agentName,
  executor_digest_sha256: digestSha256,
  agent_digest_sha256: digestSha256,
});

export const enrolmentParams = z.strictObject({ enrolment_id: z.string().regex(/^enr_[0-9a-f-]{36}$/, 'must be an enrolment id') });
