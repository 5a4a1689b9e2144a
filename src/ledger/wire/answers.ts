import { z } from 'zod';
import { AUTHORIZATION_STATUSES } from '../authorization-rules.js';

/*
 * What the ledger API answers — defined once, here. The ledger's use cases build their views as
 * these types (routes: src/ledger/http/ledger-app.ts), its client (src/ledger/client/) and the
 * executor's gateway (src/executor/ledger-gateway.ts) parse the answers with these schemas; the
 * gateway picks the part it reads. Objects are not strict: a newer ledger may add fields without
 * breaking an older client. Amounts travel as decimal digit strings and are bigint on both sides;
 * a JSON number is refused (it may already have lost precision), never rounded.
 */

import { added, amount, scale, timestamp } from './answer-parts.js';

export const agentSchema = z.object({
  agent_id: z.string(),
  name: z.string(),
  /** `active`, or `suspended` by an operator (new spend requests refused). */
  status: z.string(),
  created_at: timestamp,
  /** When an operator suspended it and why (the reason may be null); both null while active. */
  suspended_at: added(timestamp),
  suspension_reason: added(z.string()),
  /** Who suspended it: `operator`, or `velocity_breaker` (its policy's runaway-loop breaker, automatically); null while active. */
  suspended_by: added(z.string()),
});
export type LedgerAgent = z.output<typeof agentSchema>;

export const policySchema = z.object({
  agent_id: z.string(),
  per_authorization_cap_units: amount,
  daily_cap_units: amount,
  approval_threshold_units: amount,
  units_scale: scale,
  currency: z.string(),
  /** The runaway-loop breaker (docs/ledger.md "Velocity limits"): null when not set, or from an older ledger. */
  max_requests_per_minute: added(amount),
  max_requests_per_hour: added(amount),
  suspend_after_velocity_refusals: added(amount),
  /** Calendar budgets (docs/ledger.md "Budgets"): null when not set, or from an older ledger. */
  day_budget_units: added(amount),
  week_budget_units: added(amount),
  month_budget_units: added(amount),
  /** The alert percentages of the agent's budgets (null from an older ledger). */
  budget_alert_percentages: added(z.array(z.number())),
  /** The targets the agent may pay for, each with its cap per calendar month; null: any target. */
  targets: added(z.array(z.object({ target_id: z.string(), month_cap_units: amount.nullable() }))),
  version: amount,
  updated_at: timestamp,
  /** `default`: follows [ledger.default_policy] (applied at every ledger start); `operator`: set with `ledger policy set`. */
  source: z.enum(['default', 'operator']),
});
export type LedgerPolicy = z.output<typeof policySchema>;

/**
 * One budget's standing in its current calendar period (docs/ledger.md "Budgets"): `name` is
 * `agent.day|week|month`, `target:<target_id>` or `installation.day|week|month`; spent is settled,
 * held is live holds and claims, of the authorizations created in the period.
 */
export const budgetStandingSchema = z.object({
  name: z.string(),
  period: z.string(),
  period_start: timestamp,
  period_end: timestamp,
  limit_units: amount,
  spent_units: amount,
  held_units: amount,
  remaining_units: amount,
  alert_percentages: z.array(z.number()),
});
export type LedgerBudgetStanding = z.output<typeof budgetStandingSchema>;

/** `GET /budgets/installation`: the budget across all agents, versioned like a policy, in the installation's time zone. */
export const installationBudgetSchema = z.object({
  day_budget_units: amount.nullable(),
  week_budget_units: amount.nullable(),
  month_budget_units: amount.nullable(),
  alert_percentages: z.array(z.number()),
  units_scale: scale,
  currency: z.string(),
  time_zone: z.string(),
  version: amount,
  updated_at: timestamp,
});
export type LedgerInstallationBudget = z.output<typeof installationBudgetSchema>;
export const installationBudgetAnswerSchema = z.object({ budget: installationBudgetSchema, standing: z.array(budgetStandingSchema) });
export type LedgerInstallationBudgetAnswer = z.output<typeof installationBudgetAnswerSchema>;

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
  /** `active`, or `suspended` by an operator: its requests are refused whatever the room (null from an older ledger). */
  agent_status: added(z.string()),
  /** Every calendar budget the agent is under, its own and the installation's, in the current period (empty from an older ledger). */
  budgets: added(z.array(budgetStandingSchema)).transform((budgets) => budgets ?? []),
  /** The installation's time zone, in which the periods are cut (null from an older ledger). */
  time_zone: added(z.string()),
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
  /** The person who decided it (a named approver's credential); null for the policy or an unnamed credential. */
  decided_by_name: added(z.string()),
  decision_reason: z.string().nullable(),
  /** The policy the request was decided under; null for one made before the ledger kept it (absent from older ledgers). */
  policy: z
    .object({ version: amount.nullable(), per_authorization_cap_units: amount, daily_cap_units: amount, approval_threshold_units: amount })
    .nullable()
    .optional()
    .transform((policy) => policy ?? null),
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
  /** Set when it was cancelled unclaimed (`agent_suspended`): final, nothing held. */
  cancellation: added(z.object({ reason: z.string(), cancelled_at: timestamp })),
  /** The executor target the agent asked to pay for (null when it named none, and from an older ledger). */
  target_id: added(z.string()),
  /** The prompt the agent asked to pay for, shown to whoever approves it (null when it gave none, and from an older ledger). */
  prompt: added(z.string()),
  /**
   * When the agent last read this authorization (`GET /authorizations/{id}`, as `lexec run` does
   * while it waits): recorded at most once every few seconds; null when it never asked (and from
   * an older ledger). A recent time means a client is still waiting on the request.
   */
  client_waiting: added(z.object({ last_seen_at: timestamp })),
});
export type LedgerAuthorization = z.output<typeof authorizationSchema>;

export const credentialRegistrationSchema = z.object({
  credential: z.object({ credential_id: z.string(), kind: z.string(), agent_id: z.string().nullable(), holder_name: added(z.string()) }),
  outcome: z.enum(['created', 'unchanged']),
});
export type CredentialRegistration = z.output<typeof credentialRegistrationSchema>;

/** A credential as `GET /credentials` shows it (never a capability, digest or lookup). */
export const credentialSchema = z.object({
  credential_id: z.string(),
  kind: z.string(),
  agent_id: z.string().nullable(),
  /** The person it belongs to (named approvers); null when issued without a name. */
  holder_name: z.string().nullable(),
  /** `active`; `expiring` while a rotation's grace runs (`expires_at`); `revoked` (`revoked_at`). */
  status: z.enum(['active', 'expiring', 'revoked']),
  created_at: timestamp,
  /** The minute of its last accepted use (null: never used since lexec recorded uses). */
  last_used_at: timestamp.nullable(),
  expires_at: timestamp.nullable(),
  revoked_at: timestamp.nullable(),
  /** The id of the first credential of its line (a rotation keeps the line). */
  lineage: z.string(),
  rotated_from: z.string().nullable(),
  replaced_by: z.string().nullable(),
});
export type LedgerCredential = z.output<typeof credentialSchema>;

export const credentialListSchema = z.object({ credentials: z.array(credentialSchema) });
export const credentialAnswerSchema = z.object({ credential: credentialSchema });
export const credentialRevocationSchema = z.object({ credential: credentialSchema, changed: z.boolean() });
export type LedgerCredentialRevocation = z.output<typeof credentialRevocationSchema>;
export const credentialRotationSchema = z.object({ credential: credentialSchema, replaced: credentialSchema, outcome: z.enum(['created', 'unchanged']) });
export type LedgerCredentialRotation = z.output<typeof credentialRotationSchema>;

/** `{"error":{…}}` as every lexec server writes it (src/http/api-error.ts). */
export const errorBodySchema = z.object({
  error: z.object({
    code: z.string(),
    reason_code: z.string().optional(),
    fields: z.array(z.string()).optional(),
    retryable: z.boolean().optional(),
    /** A 412 `policy_version_mismatch`: the version the policy is at now (dropped if malformed: the refusal still stands). */
    current_version: amount.optional().catch(undefined),
    /** A 429: seconds until a request would be within the velocity limits again (also the `Retry-After` header). */
    retry_after_seconds: z.int().min(0).optional().catch(undefined),
    /** A 429 `velocity_exceeded`: the policy field of the limit it is over. */
    velocity_limit: z.string().optional().catch(undefined),
    /** A 403 `agent_suspended` the runaway-loop breaker caused: `velocity_breaker`. */
    suspended_by: z.string().optional().catch(undefined),
    /** A 409 `authorization_approved|denied`: who decided it already (credential id, a named approver's name) and when. */
    decided_by: z.string().max(128).optional().catch(undefined),
    decided_by_name: z.string().max(100).optional().catch(undefined),
    decided_at: timestamp.optional().catch(undefined),
    /** A 422 `policy_refused: budget_exceeded`: the budget that refused it, its period and figures (digit strings). */
    budget: z.string().max(300).optional().catch(undefined),
    period: z.string().max(20).optional().catch(undefined),
    period_start: timestamp.optional().catch(undefined),
    period_end: timestamp.optional().catch(undefined),
    limit_units: amount.optional().catch(undefined),
    committed_units: amount.optional().catch(undefined),
    remaining_units: amount.optional().catch(undefined),
  }),
});
export type LedgerErrorBody = z.output<typeof errorBodySchema>['error'];

/** `GET /version` (public): the ledger's lineage and contract level. */
export const versionSchema = z.object({
  product: z.string(),
  product_version: z.string(),
  contract_version: z.string(),
  commit: z.string(),
  build_kind: z.enum(['release', 'development']),
  contract_level: z.string().optional(),
});
export type LedgerVersion = z.output<typeof versionSchema>;

/** What the executor sees of an authorization: authoritative account, agent, held amount, status and expiry. */
export const resolutionSchema = z.object({
  token_id: z.string(),
  account_id: z.string().min(1),
  agent_id: z.string().min(1),
  // Any status string: the executor decides what it can use, so a status a newer ledger adds is refused there, by name.
  status: z.string(),
  held_units: amount,
  units_scale: scale,
  currency: z.string(),
  expires_at: z.string(),
  execution_id: z.string().nullable(),
});
export type LedgerResolution = z.output<typeof resolutionSchema>;

/** One of an executor's own claims (`GET /executor/claims`): still `claimed`, by the calling credential. */
export const claimSchema = z.object({
  token_id: z.string(),
  execution_id: z.string(),
  claimed_at: timestamp,
});
export type LedgerClaim = z.output<typeof claimSchema>;

/** A value of an audit event's `before` or `after`: ledger-made (a status, a version, an amount as digits, an id), never free text. */
const auditValue = z.union([z.string(), z.number(), z.boolean(), z.null()]);

/**
 * One operator action of the audit trail (`GET /audit`; docs/ledger.md "Audit trail"). Who:
 * `actor_kind` is the credential's kind, or `ledger` for the ledger's own acts (then
 * `actor_credential_id` is null); `actor_name` is the person's name once credentials carry one
 * (null until then, and from an older ledger). `action` is any string: a newer ledger may record
 * more kinds of action. `before`/`after` are the state the action changed, where it applies.
 */
export const auditEventSchema = z.object({
  audit_id: z.string().regex(/^\d{1,19}$/, 'must be a decimal digit string'),
  at: timestamp,
  actor_kind: z.string(),
  actor_credential_id: z.string().nullable(),
  actor_name: added(z.string()),
  action: z.string(),
  agent_id: z.string().nullable(),
  subject_id: z.string(),
  before: z.record(z.string(), auditValue).nullable(),
  after: z.record(z.string(), auditValue).nullable(),
  reason: z.string().nullable(),
});
export type LedgerAuditEvent = z.output<typeof auditEventSchema>;
export type LedgerAuditState = NonNullable<LedgerAuditEvent['after']>;

/* Envelopes: each route answers one of these. */
export const agentAnswerSchema = z.object({ agent: agentSchema });
/**
 * `POST /agents/{id}/suspend` and `/resume`: the agent as it is now, how many unclaimed
 * authorizations this very call cancelled, and whether it changed anything (a repeat does not).
 */
export const agentSuspensionAnswerSchema = z.object({
  agent: agentSchema,
  cancelled_authorizations: z.int().min(0),
  changed: z.boolean(),
});
export type LedgerAgentSuspension = z.output<typeof agentSuspensionAnswerSchema>;
export const agentsAnswerSchema = z.object({ agents: z.array(agentSchema) });
export const policyAnswerSchema = z.object({ policy: policySchema });
export const spendingAnswerSchema = z.object({ spending: spendingSchema });
export const authorizationAnswerSchema = z.object({ authorization: authorizationSchema });
export const authorizationsAnswerSchema = z.object({ authorizations: z.array(authorizationSchema) });
/**
 * `POST /authorizations`: the authorization, and whether it is the open one the request's
 * `Idempotency-Key` opened earlier (`replayed`; absent from an older ledger, which always opens a new one).
 */
export const authorizationRequestAnswerSchema = z.object({ authorization: authorizationSchema, replayed: added(z.boolean()).transform((replayed) => replayed ?? false) });
export type LedgerAuthorizationRequest = z.output<typeof authorizationRequestAnswerSchema>;
/** `GET /executor/authorizations/{id}` and the claim (which resolves). */
export const resolutionAnswerSchema = z.object({ authorization: resolutionSchema });
/** `GET /executor/claims`: one page of the caller's claims; `next_after` continues it (null: the last page). */
export const claimsAnswerSchema = z.object({ claims: z.array(claimSchema), next_after: z.string().nullable() });
/** `GET /audit`: one page of the audit trail, oldest first; `next_after` continues it (null: the last page for now). */
export const auditAnswerSchema = z.object({ events: z.array(auditEventSchema), next_after: z.string().nullable() });
export type LedgerAuditPage = z.output<typeof auditAnswerSchema>;

export * from './answers-alerts-and-reports.js';
