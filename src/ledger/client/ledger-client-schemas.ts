import { z } from 'zod';
import { answeredWholeNumber } from '../../config/schema-parts.js';
import { UNITS_SCALE } from '../../domain/money.js';
import { AUTHORIZATION_STATUSES } from '../authorization-rules.js';

/*
 * What the ledger API answers, as its client reads it (routes: src/ledger/http/ledger-app.ts).
 * Objects are not strict: a newer ledger may add fields without breaking an older CLI. Amounts
 * arrive as decimal strings and become bigint here; a float is refused, never rounded.
 */

const amount = answeredWholeNumber;

const timestamp = z.iso.datetime();
const scale = z.literal(UNITS_SCALE);

export const agentSchema = z.object({
  agent_id: z.string(),
  name: z.string(),
  status: z.string(),
  created_at: timestamp,
});
export type LedgerAgent = z.output<typeof agentSchema>;

export const policySchema = z.object({
  agent_id: z.string(),
  per_authorization_cap_units: amount,
  daily_cap_units: amount,
  approval_threshold_units: amount,
  units_scale: scale,
  currency: z.string(),
  version: amount,
  updated_at: timestamp,
  /** `default`: follows [ledger.default_policy] (applied at every ledger start); `operator`: set with `ledger policy set`. */
  source: z.enum(['default', 'operator']),
});
export type LedgerPolicy = z.output<typeof policySchema>;

/** `GET /agent/spending`: the calling agent's policy and its standing in the cap's rolling window. */
export const spendingSchema = z.object({
  agent_id: z.string(),
  window: z.literal('rolling_24h'),
  spent_units: amount,
  held_units: amount,
  remaining_units: amount,
  units_scale: scale,
  currency: z.string(),
  as_of: timestamp,
  policy: policySchema,
});
export type LedgerSpending = z.output<typeof spendingSchema>;

export const authorizationSchema = z.object({
  token_id: z.string(),
  account_id: z.string(),
  agent_id: z.string(),
  status: z.enum(AUTHORIZATION_STATUSES),
  amount_units: amount,
  units_scale: scale,
  currency: z.string(),
  amount_cents: amount,
  purpose: z.string().nullable(),
  execution_id: z.string().nullable(),
  decided_by: z.string().nullable(),
  decision_reason: z.string().nullable(),
  created_at: timestamp,
  decided_at: timestamp.nullable(),
  expires_at: timestamp,
  settlement: z
    .object({
      settlement_id: z.string(),
      receipt_id: z.string(),
      receipt_shape: z.string(),
      amount_units: amount,
      amount_cents: amount,
      settled_at: timestamp,
    })
    .nullable(),
  release: z.object({ reason: z.string(), released_at: timestamp }).nullable(),
});
export type LedgerAuthorization = z.output<typeof authorizationSchema>;

export const credentialRegistrationSchema = z.object({
  credential: z.object({ credential_id: z.string(), kind: z.string(), agent_id: z.string().nullable() }),
  outcome: z.enum(['created', 'unchanged']),
});
export type CredentialRegistration = z.output<typeof credentialRegistrationSchema>;

/** `{"error":{…}}` as every lexec server writes it (src/http/api-error.ts). */
export const errorBodySchema = z.object({
  error: z.object({
    code: z.string(),
    reason_code: z.string().optional(),
    fields: z.array(z.string()).optional(),
    retryable: z.boolean().optional(),
  }),
});
export type LedgerErrorBody = z.output<typeof errorBodySchema>['error'];
