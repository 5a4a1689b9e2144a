import { z } from 'zod';
import { UserError } from '../errors.js';
import { readJsonDocument } from '../config/read-json-document.js';
import { absolutePath, httpListen, wholeNumber } from '../config/schema-parts.js';
import { findRawSecrets } from '../config/secret-scan.js';
import { toFieldIssues } from '../config/zod-issues.js';
import { isTimeZone } from '../domain/calendar-period.js';
import { UNITS_SCALE } from '../domain/money.js';
import { PRODUCT_NAME } from '../product.js';

/*
 * Ledger service configuration (docs/ledger.md). Strict like the executor's: unknown fields
 * anywhere are errors, paths are absolute, amounts are exact whole micro-units, no secrets.
 */

export const LEDGER_CONFIG_SCHEMA_VERSION = 1;

/**
 * Receipt contract levels. `v4.5` (current) accepts precise receipts and the legacy cents shape;
 * `v4.4` is an older ledger that knows only whole-cent receipts and refuses the precise shape.
 */
export const LEDGER_CONTRACT_LEVELS = ['v4.5', 'v4.4'] as const;
export type LedgerContractLevel = (typeof LEDGER_CONTRACT_LEVELS)[number];

const amount = (what: string) => wholeNumber({ min: 1n, what });

/**
 * A velocity count of a policy (docs/ledger.md "Velocity limits"): a whole number from 1 to
 * `max`, or null / left out for none. The bounds are far beyond what one ledger serves (a few
 * hundred requests a second); a larger figure is a typo, not a limit.
 */
const velocityCount = (what: string, max: bigint) =>
  wholeNumber({ min: 1n, what })
    .refine((count) => count <= max, `${what} must be at most ${max}`)
    .nullable()
    .optional();

/** An alert percentage of a budget: a whole number 1-100 (of the budget's limit). */
export const alertPercentages = z
  .array(z.number({ error: 'must be a whole number from 1 to 100' }).int('must be a whole number from 1 to 100').min(1, 'must be at least 1').max(100, 'must be at most 100'), {
    error: 'must be a list of whole numbers from 1 to 100',
  })
  .max(10, 'must list at most 10 percentages')
  .superRefine((percentages, ctx) => {
    percentages.forEach((percent, index) => {
      if (percentages.indexOf(percent) !== index) ctx.addIssue({ code: 'custom', path: [index], message: 'repeats an earlier percentage' });
    });
  })
  .transform((percentages) => [...percentages].sort((a, b) => a - b));

/** A budget of a calendar period (docs/ledger.md "Budgets"): micro-units from 1; null or left out for none. */
const budgetAmount = (what: string) => wholeNumber({ min: 1n, what }).nullable().optional();

/** An executor target id, as the executor's configuration names its targets. */
export const ledgerTargetId = z
  .string({ error: 'must be a target id' })
  .regex(new RegExp(`^${PRODUCT_NAME}:target:v1:[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`), `must be a versioned target id: ${PRODUCT_NAME}:target:v1:<id> (<id>: 1-64 letters, digits, . _ -)`);

/** An agent's allow-list of targets, each with an optional cap per calendar month. */
const targetAllowList = z
  .array(z.strictObject({ target_id: ledgerTargetId, month_cap_units: wholeNumber({ min: 1n, what: 'the monthly cap of a target' }).nullable().optional().transform((cap) => cap ?? null) }), {
    error: 'must be a list of {"target_id": …, "month_cap_units": …}',
  })
  .max(100, 'must list at most 100 targets')
  .superRefine((targets, ctx) => {
    targets.forEach((target, index) => {
      if (targets.findIndex((other) => other.target_id === target.target_id) !== index) ctx.addIssue({ code: 'custom', path: [index, 'target_id'], message: 'repeats an earlier target' });
    });
  });

export const spendPolicySchema = z
  .strictObject({
    per_authorization_cap_units: amount('the per-authorization cap'),
    daily_cap_units: amount('the daily cap'),
    approval_threshold_units: wholeNumber({ min: 0n, what: 'the approval threshold' }),
    units_scale: z.literal(UNITS_SCALE, { error: `must be ${UNITS_SCALE} (amounts are micro-units)` }),
    currency: z.literal('USD', { error: 'must be "USD"' }),
    // The runaway-loop breaker, all optional: a policy without them behaves as before they existed.
    max_requests_per_minute: velocityCount('the requests per minute', 100_000n),
    max_requests_per_hour: velocityCount('the requests per hour', 1_000_000n),
    suspend_after_velocity_refusals: velocityCount('the velocity refusals before a suspension', 100_000n),
    // Calendar budgets and the target allow-list (docs/ledger.md "Budgets"), all optional.
    day_budget_units: budgetAmount('the day budget'),
    week_budget_units: budgetAmount('the week budget'),
    month_budget_units: budgetAmount('the month budget'),
    budget_alert_percentages: alertPercentages.nullable().optional(),
    targets: targetAllowList.nullable().optional(),
  })
  .superRefine((policy, ctx) => {
    if (policy.per_authorization_cap_units > policy.daily_cap_units) {
      ctx.addIssue({ code: 'custom', path: ['per_authorization_cap_units'], message: 'must not exceed daily_cap_units' });
    }
    // Only a velocity refusal counts towards the breaker: it needs a limit, stated beside it.
    if (policy.suspend_after_velocity_refusals != null && policy.max_requests_per_minute == null && policy.max_requests_per_hour == null) {
      ctx.addIssue({ code: 'custom', path: ['suspend_after_velocity_refusals'], message: 'needs max_requests_per_minute or max_requests_per_hour (only a velocity refusal counts)' });
    }
  });
export type SpendPolicyInput = z.output<typeof spendPolicySchema>;

/** How long an authorization holds its amount; a launcher profile's [ledger] takes the same field. */
export const authorizationTtlSeconds = z
  .number({ error: 'must be a whole number of seconds' })
  .int('must be a whole number of seconds')
  .min(60, 'must be at least 60')
  .max(7 * 24 * 3600, 'must be at most 604800 (7 days)')
  .default(3600);

/** An IANA time zone name the runtime knows ("UTC", "Europe/Berlin", …). */
export const timeZone = z
  .string({ error: 'must be an IANA time zone name, for example "UTC" or "Europe/Berlin"' })
  .refine(isTimeZone, 'must be an IANA time zone name this runtime knows, for example "UTC" or "Europe/Berlin"');
const milliseconds = (min: number, max: number, fallback: number) =>
  z.number({ error: 'must be a whole number of milliseconds' }).int('must be a whole number of milliseconds').min(min, `must be at least ${min}`).max(max, `must be at most ${max}`).default(fallback);

/** How many days a delivered webhook delivery's row is kept (pending and failed ones are kept until an operator looks); a launcher profile's [ledger] takes it too. */
export const deliveredRetentionDays = z
  .number({ error: 'must be a whole number of days' })
  .int('must be a whole number of days')
  .min(1, 'must be at least 1')
  .max(3650, 'must be at most 3650 (10 years)');

export const webhookDeliverySchema = z
  .strictObject({
    timeout_ms: milliseconds(100, 60_000, 10_000),
    first_retry_ms: milliseconds(10, 3_600_000, 1_000),
    max_retry_ms: milliseconds(10, 6 * 3_600_000, 3_600_000),
    delivered_retention_days: deliveredRetentionDays.default(30),
  })
  .refine((timings) => timings.first_retry_ms <= timings.max_retry_ms, { path: ['first_retry_ms'], message: 'must not exceed max_retry_ms' });

export const ledgerConfigSchema = z.strictObject({
  schema_version: z.literal(LEDGER_CONFIG_SCHEMA_VERSION, { error: `must be ${LEDGER_CONFIG_SCHEMA_VERSION}` }),
  http: httpListen,
  database_path: absolutePath,
  admin_capability_path: absolutePath,
  contract_level: z.enum(LEDGER_CONTRACT_LEVELS, { error: 'must be "v4.5" or "v4.4"' }).default('v4.5'),
  authorization_ttl_seconds: authorizationTtlSeconds,
  default_policy: spendPolicySchema,
  /** The installation's time zone (IANA): calendar budgets' days, weeks and months begin at its midnight. */
  time_zone: timeZone.default('UTC'),
  /** Webhook delivery timings and retention (docs/ledger.md "Webhooks"); left out: 10 s per POST, retries from 1 s doubling to 1 h, delivered rows kept 30 days. */
  webhook_delivery: webhookDeliverySchema.optional(),
});
export type LedgerConfig = z.output<typeof ledgerConfigSchema>;

/** Reads and validates a ledger configuration file; every problem is reported with its path. */
export async function loadLedgerConfig(path: string): Promise<LedgerConfig> {
  const document = await readJsonDocument(path, 'configuration file');
  const parsed = ledgerConfigSchema.safeParse(document, { reportInput: true });
  const issues = [...(parsed.success ? [] : toFieldIssues(parsed.error.issues)), ...findRawSecrets(document)];
  if (!parsed.success || issues.length > 0) {
    throw new UserError('config_invalid', `The configuration file ${path} has ${issues.length} problem${issues.length === 1 ? '' : 's'}.`, {
      nextStep: 'Fix each field listed (docs/ledger.md describes every field), then start again.',
      issues,
    });
  }
  return parsed.data;
}
