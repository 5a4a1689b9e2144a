import { z } from 'zod';
import { UserError } from '../errors.js';
import { readJsonDocument } from '../config/read-json-document.js';
import { absolutePath, httpListen, wholeNumber } from '../config/schema-parts.js';
import { findRawSecrets } from '../config/secret-scan.js';
import { toFieldIssues } from '../config/zod-issues.js';
import { UNITS_SCALE } from '../domain/money.js';

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

const milliseconds = (min: number, max: number, fallback: number) =>
  z.number({ error: 'must be a whole number of milliseconds' }).int('must be a whole number of milliseconds').min(min, `must be at least ${min}`).max(max, `must be at most ${max}`).default(fallback);

export const webhookDeliverySchema = z
  .strictObject({
    timeout_ms: milliseconds(100, 60_000, 10_000),
    first_retry_ms: milliseconds(10, 3_600_000, 1_000),
    max_retry_ms: milliseconds(10, 6 * 3_600_000, 3_600_000),
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
  /** Webhook delivery timings (docs/ledger.md "Webhooks"); left out: 10 s per POST, retries from 1 s doubling to 1 h. */
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
