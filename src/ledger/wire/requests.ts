import { z } from 'zod';
import { absolutePath, freeText, wholeNumber } from '../../config/schema-parts.js';
import { MAX_ROTATION_GRACE_SECONDS } from '../../credentials/capability.js';
import { isCivilDate } from '../../domain/calendar-period.js';
import { UNITS_SCALE } from '../../domain/money.js';
import { SPEND_GROUPINGS } from '../summarise-spend.js';
import { MAX_PROMPT_CHARS } from '../../domain/prompt-text.js';
import { LEDGER_EVENT_TYPES } from '../events/ledger-event-types.js';
import { DEFAULT_ALERT_PERCENTAGES } from '../budget-rules.js';
import { alertPercentages } from '../ledger-config.js';
import { webhookUrl } from '../webhooks/webhook-url.js';
import { legacyPriceProjectionSchema, priceModelSnapshotSchema } from '../../domain/price-model-snapshot.js';

/* Request bodies of the ledger API. Strict: unknown fields are refused with their paths. */

const opaqueId = (what: string) =>
  z.string({ error: `must be ${what}` }).regex(/^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$/, `must be ${what} (1-128 letters, digits, _ . : -)`);

export const executionId = opaqueId('an execution id');
/** Free text a person or an agent writes: bounded, and never a secret (src/domain/secret-text.ts). */
const shortText = (max: number) => freeText(z.string({ error: 'must be a string' }).max(max, `must be at most ${max} characters`));

const units = z.literal(UNITS_SCALE, { error: `must be ${UNITS_SCALE} (amounts are micro-units)` });
const usd = z.literal('USD', { error: 'must be "USD" (the only currency)' });

export const authorizationRequestBody = z.strictObject({
  amount_units: wholeNumber({ min: 1n, what: 'the amount' }),
  units_scale: units,
  currency: usd,
  purpose: shortText(200).optional(),
  /** The executor target it pays for (the execution's `target_id`): budgets per target and the claim check it (docs/ledger.md "Budgets"). */
  target_id: z.string({ error: 'must be a target id' }).min(1, 'must not be empty').max(200, 'must be at most 200 characters').optional(),
  /** The prompt it pays for, shown to the approver; never in an event (docs/ledger.md "Events"). */
  prompt: freeText(z.string({ error: 'must be a string' }).min(1, 'must not be empty').max(MAX_PROMPT_CHARS, `must be at most ${MAX_PROMPT_CHARS} characters`)).optional(),
});

/**
 * `PUT /budgets/installation`: the whole installation budget (a period left out or null has no
 * budget; alert percentages left out are 50, 80, 100). Amounts are micro-units.
 */
export const installationBudgetBody = z.strictObject({
  day_budget_units: wholeNumber({ min: 1n, what: 'the day budget' }).nullable().optional().transform((units) => units ?? null),
  week_budget_units: wholeNumber({ min: 1n, what: 'the week budget' }).nullable().optional().transform((units) => units ?? null),
  month_budget_units: wholeNumber({ min: 1n, what: 'the month budget' }).nullable().optional().transform((units) => units ?? null),
  alert_percentages: alertPercentages.optional().transform((percentages) => percentages ?? [...DEFAULT_ALERT_PERCENTAGES]),
  units_scale: units,
  currency: usd,
});

export const agentBody = z.strictObject({
  name: z
    .string({ error: 'must be a name' })
    .regex(/^[a-z0-9][a-z0-9_-]{0,63}$/, 'must be 1-64 lower-case letters, digits, _ or - (starting with a letter or digit)'),
});

const digestSha256 = z.string({ error: 'must be a hex SHA-256 digest' }).regex(/^[0-9a-f]{64}$/, 'must be 64 lower-case hex digits');

export const credentialBody = z.strictObject({
  kind: z.enum(['agent', 'approver', 'executor', 'reconciliation', 'metrics'], { error: 'must be "agent", "approver", "executor", "reconciliation" or "metrics"' }),
  agent_id: opaqueId('an agent id').optional(),
  digest_sha256: digestSha256,
  /** The person the credential belongs to (a named approver), shown with every decision it makes. */
  holder_name: shortText(100).refine((name) => name.trim() !== '', 'must not be blank').optional(),
});
/** `self` names the calling credential (`GET /credentials/self`): no credential can take that id. */
export const credentialId = opaqueId('a credential id').refine((id) => id !== 'self', 'must not be "self" (it names the calling credential)');

/** `GET /credentials`: all, or one kind, or one agent's. */
export const credentialsQuery = z.strictObject({
  kind: z.enum(['admin', 'agent', 'approver', 'executor', 'reconciliation', 'metrics'], { error: 'must be a credential kind' }).optional(),
  agent_id: opaqueId('an agent id').optional(),
});

/** `POST /credentials/{id}/revoke`: nothing to say (an empty object, or no body). */
export const revokeBody = z.strictObject({});

/** `POST /credentials/{id}/rotate`: the new credential's id and digest (its capability stays with the client), and the old one's grace. */
export const rotateBody = z.strictObject({
  new_credential_id: credentialId,
  digest_sha256: digestSha256,
  grace_seconds: z
    .number({ error: 'must be a whole number of seconds' })
    .int('must be a whole number of seconds')
    .min(0, 'must be at least 0')
    .max(MAX_ROTATION_GRACE_SECONDS, `must be at most ${MAX_ROTATION_GRACE_SECONDS} (a day)`)
    .default(0),
});

export const decisionBody = z.strictObject({ reason: shortText(500).optional() });

/** The largest SQLite INTEGER: the largest version a precondition can name, the largest audit id. */
const MAX_INTEGER = 9_223_372_036_854_775_807n;

/** A page's `after`: the id (`what`: "an audit id", "an event id") of the previous page's `next_after`. */
const rowId = (what: string, hint: string) =>
  z
    .string({ error: `must be ${what}` })
    .regex(/^\d{1,19}$/, `must be ${what} (${hint})`)
    .transform(BigInt)
    .refine((id) => id <= MAX_INTEGER, `must be at most ${MAX_INTEGER}`);
const pageAfter = (what: string, cursor = 'next_after') => rowId(what, `the ${cursor} of the previous page`);

/**
 * The precondition of `PUT /agents/{agent_id}/policy`: `If-Match` names the policy version the
 * change was made from, as a whole number (`If-Match: 3`) or a strong entity tag
 * (`If-Match: "3"`, RFC 9110's form). Absent, the change is unconditional (as before the header
 * existed). `*`, weak tags (`W/"3"`) and lists are malformed: they could not name one version.
 */
export const policyPrecondition = z.strictObject({
  'if-match': z
    .string()
    .regex(/^(?:\d{1,19}|"\d{1,19}")$/, 'must be a policy version: a whole number, as in If-Match: 3')
    .transform((value) => BigInt(value.replaceAll('"', '')))
    .refine((version) => version <= MAX_INTEGER, `must be at most ${MAX_INTEGER}`)
    .optional(),
});

/**
 * The `Idempotency-Key` of `POST /authorizations` (Stripe's header; docs/ledger.md "Idempotent
 * requests"): 1-255 printable ASCII characters, chosen by the agent; absent, every request opens
 * its own authorization (as before the header existed). Never echoed: only its path is reported.
 */
export const idempotencyKey = z.string({ error: 'must be 1-255 printable ASCII characters' }).regex(/^[\x20-\x7e]{1,255}$/, 'must be 1-255 printable ASCII characters');
export const idempotencyKeyHeader = z.strictObject({ 'idempotency-key': idempotencyKey.optional() });

/** `POST /agents/{id}/suspend`: the operator's reason, kept with the suspension (optional; the body may be left out). */
export const suspendBody = z.strictObject({ reason: shortText(500).optional() });
/** `POST /agents/{id}/resume`: nothing to say (an empty object, or no body). */
export const resumeBody = z.strictObject({});

/**
 * A claim may state what the claiming execution needs of the authorization: the ledger then
 * checks it in the claim's own transaction and claims nothing when it does not hold, so the
 * claim's answer is the authoritative resolution (one round trip, no gap between a read and
 * the claim).
 */
export const claimBody = z.strictObject({
  execution_id: executionId,
  require: z
    .strictObject({
      currency: usd,
      min_held_units: wholeNumber({ min: 0n, what: 'the least hold the execution needs' }),
      /** The execution's target: an authorization that names a target is claimed only for it (docs/ledger.md "Budgets"). */
      target_id: z.string({ error: 'must be a target id' }).min(1, 'must not be empty').max(200, 'must be at most 200 characters').optional(),
    })
    .optional(),
});
export type ClaimRequirement = NonNullable<z.output<typeof claimBody>['require']>;

export const preciseReceipt = z.strictObject({
  receipt_id: opaqueId('a receipt id'),
  amount_units: wholeNumber({ min: 1n, what: 'the amount' }),
  units_scale: units,
  currency: usd,
  provider_request_id: opaqueId('a provider request id'),
  price_model_snapshot: priceModelSnapshotSchema,
});
export type PreciseReceipt = z.output<typeof preciseReceipt>;

export const legacyCentsReceipt = z.strictObject({
  receipt_id: opaqueId('a receipt id'),
  amount_cents: wholeNumber({ min: 1n, what: 'the amount' }),
  currency: usd,
  price_model_snapshot: legacyPriceProjectionSchema,
});
export type LegacyCentsReceipt = z.output<typeof legacyCentsReceipt>;

export const settleBody = z.strictObject({
  execution_id: executionId,
  receipt: z.record(z.string(), z.unknown(), { error: 'must be a receipt object' }),
});

export const releaseBody = z.strictObject({
  execution_id: executionId,
  reason: z.enum(['not_transmitted', 'provider_failed_before_charge', 'cancelled', 'reconciled_no_charge', 'claim_without_execution'], {
    error: 'must be a release reason: not_transmitted, provider_failed_before_charge, cancelled, reconciled_no_charge or claim_without_execution',
  }),
});

/** Longest age `GET /executor/claims` takes: 30 days (an authorization expires long before). */
export const MAX_CLAIM_AGE_SECONDS = 30 * 86_400;

/** A whole number written as decimal digits only (a query value: no sign, exponent, blank or fraction). */
const digits = (what: string, min: number, max: number) =>
  z
    .string({ error: `must be ${what}` })
    .regex(/^\d{1,10}$/, `must be ${what} written in decimal digits`)
    .transform(Number)
    .pipe(z.number().min(min, `must be at least ${min}`).max(max, `must be at most ${max}`));

/** The query of `GET /executor/claims`: the caller's claims at least this old, one bounded page at a time. */
export const claimsQuery = z.strictObject({
  older_than_seconds: digits('a number of seconds', 0, MAX_CLAIM_AGE_SECONDS),
  limit: digits('a page size', 1, 500).optional().transform((limit) => limit ?? 100),
  after: z.uuid({ error: 'must be a token id (the next_after of the previous page)' }).optional(),
});

/** An agent id as the ledger issues it: `agt_` and a UUID. */
export const agentId = z.string({ error: 'must be an agent id' }).regex(/^agt_[0-9a-f-]{36}$/, 'must be an agent id (agt_ followed by a UUID)');

/**
 * The query of `GET /audit`: events oldest first, from `since` (an ISO 8601 time with its offset)
 * and after `after` (the previous page's `next_after`), of one agent or all, a bounded page.
 */
export const auditQuery = z.strictObject({
  since: z.iso
    .datetime({ offset: true, error: 'must be an ISO 8601 time with its offset, as in 2026-11-25T10:00:00Z' })
    .transform((text) => Date.parse(text))
    .optional(),
  after: pageAfter('an audit id').optional(),
  agent_id: agentId.optional(),
  limit: digits('a page size', 1, 500).optional().transform((limit) => limit ?? 100),
});

/** Longest a `GET /events` long-poll waits for an event (`wait_seconds`). */
export const MAX_EVENTS_WAIT_SECONDS = 30;

/**
 * The query of `GET /events`: events after `after` (an event id; 0 or absent: from the first),
 * of one agent or all, of some types or all, a bounded page; with `wait_seconds` (0-30) an empty
 * page is answered only once that long has passed without an event (a long-poll).
 */
export const eventsQuery = z.strictObject({
  after: pageAfter('an event id').optional(),
  agent_id: agentId.optional(),
  types: z
    .string({ error: 'must be a comma-separated list of event types' })
    .transform((text) => text.split(','))
    .pipe(z.array(z.enum(LEDGER_EVENT_TYPES, { error: `must be event types: ${LEDGER_EVENT_TYPES.join(', ')}` })))
    .optional(),
  limit: digits('a page size', 1, 500).optional().transform((limit) => limit ?? 100),
  wait_seconds: digits('a number of seconds', 0, MAX_EVENTS_WAIT_SECONDS).optional().transform((seconds) => seconds ?? 0),
});

export const reconciliationBody = z.strictObject({
  execution_id: executionId,
  reason: z.enum(['billing_ambiguous', 'submission_unconfirmed', 'deadline_expired', 'receipt_rejected'], {
    error: 'must be a reconciliation reason',
  }),
  evidence: z.record(z.string(), z.unknown(), { error: 'must be an object' }),
});

export const resolveRecordBody = z.discriminatedUnion(
  'resolution',
  [
    z.strictObject({ resolution: z.literal('settle'), receipt: z.record(z.string(), z.unknown()) }),
    z.strictObject({ resolution: z.literal('release'), reason: shortText(500) }),
  ],
  { error: 'must be {"resolution":"settle","receipt":…} or {"resolution":"release","reason":…}' },
);

/** A bound of a spend report's range as written: a calendar date (read in the installation's zone) or an ISO 8601 time with its offset. */
export const spendBoundText = z
  .string({ error: 'must be a date (2026-11-01) or an ISO 8601 time with its offset (2026-11-01T09:00:00Z)' })
  .refine(
    (text) => isCivilDate(text) || z.iso.datetime({ offset: true }).safeParse(text).success,
    'must be a date (2026-11-01) or an ISO 8601 time with its offset (2026-11-01T09:00:00Z)',
  );
/** The same, read: a date, or an instant in ms. */
export const spendBound = spendBoundText.transform((text) => (isCivilDate(text) ? { date: text } : { at: Date.parse(text) }));

/** The query of `GET /reports/spend`: how to group, and the range of settlement times [since, until). */
export const spendReportQuery = z.strictObject({
  by: z.enum(SPEND_GROUPINGS, { error: `must be one of ${SPEND_GROUPINGS.join(', ')}` }),
  since: spendBound.optional(),
  until: spendBound.optional(),
  split: z.enum(['agent', 'target'], { error: 'must be agent or target' }).optional(),
});

/**
 * `POST /webhooks` (docs/ledger.md "Webhooks"): where to POST events (https, or http to a loopback
 * host), the absolute path of the secret file that signs them (checked by the route: 0600, owned
 * by the ledger's user, 32 bytes or more), the event types to send (left out: all), the format,
 * and optionally the first event id to deliver (left out: only events after now).
 */
export const webhookBody = z.strictObject({
  url: webhookUrl,
  secret_file: absolutePath,
  events: z
    .array(z.enum(LEDGER_EVENT_TYPES, { error: `must be an event type: ${LEDGER_EVENT_TYPES.join(', ')}` }), { error: 'must be a list of event types' })
    .min(1, 'must name at least one event type (leave it out for all)')
    .optional(),
  format: z.enum(['lexec', 'slack'], { error: 'must be "lexec" or "slack"' }).default('lexec'),
  from_event_id: z
    .string({ error: 'must be an event id' })
    .regex(/^[1-9]\d{0,18}$/, 'must be an event id (decimal digits, at least 1)')
    .transform(BigInt)
    .refine((id) => id <= MAX_INTEGER, `must be at most ${MAX_INTEGER}`)
    .optional(),
});

/** A webhook sink id as the ledger issues it: `whk_` and a UUID. */
export const webhookSinkId = z.string({ error: 'must be a webhook sink id' }).regex(/^whk_[0-9a-f-]{36}$/, 'must be a webhook sink id (whk_ followed by a UUID)');

/** `GET /webhooks`: live sinks, or with `all=true` removed ones too. */
export const webhooksQuery = z.strictObject({ all: z.enum(['true', 'false'], { error: 'must be true or false' }).optional() });

/** `GET /webhooks/deliveries`: newest first, only failed ones with `failed=true`, of one sink or all. */
export const webhookDeliveriesQuery = z.strictObject({
  failed: z.enum(['true', 'false'], { error: 'must be true or false' }).optional(),
  sink_id: webhookSinkId.optional(),
  limit: digits('a page size', 1, 500).optional().transform((limit) => limit ?? 100),
  /** Only deliveries older than this one (the `next_before` of the previous page). */
  before: pageAfter('a delivery id', 'next_before').optional(),
  /** Only the deliveries of this event (one per sink that took it up). */
  event_id: rowId('an event id', 'a whole number, as GET /events numbers them').optional(),
});
