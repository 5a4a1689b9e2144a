import { mkdir } from 'node:fs/promises';
import { dirname, isAbsolute } from 'node:path';
import { readJsonDocument } from '../config/read-json-document.js';
import { toFieldIssues } from '../config/zod-issues.js';
import { UNITS_SCALE } from '../domain/money.js';
import { errorCode, UsageError, UserError } from '../errors.js';
import { writeNewFile } from '../storage/write-new-file.js';
import type { SpendPolicy } from './authorization-rules.js';
import { spendPolicySchema, type SpendPolicyInput } from './ledger-config.js';

/*
 * A policy file is exactly the body `PUT /agents/{agent_id}/policy` accepts: the three caps as
 * decimal strings of micro-units, `units_scale` 6 and `currency` "USD", the optional velocity
 * limits (whole numbers) and the optional calendar budgets, alert percentages and target allow-list. Plain JSON, written by lexec without any styling, so it never carries
 * terminal escapes whatever --color says.
 */

/** A conservative starting point (the shipped ledger example's default policy). */
export const STARTER_POLICY: SpendPolicy = {
  per_authorization_cap_units: 5_000_000n,
  daily_cap_units: 20_000_000n,
  approval_threshold_units: 1_000_000n,
};

/** The velocity fields of a policy, in the order a policy file lists them. */
const VELOCITY_FIELDS = ['max_requests_per_minute', 'max_requests_per_hour', 'suspend_after_velocity_refusals'] as const;

/** The policy file document for `policy`: its velocity limits (counts, as JSON integers) only when set. */
export function policyFileDocument(policy: SpendPolicy) {
  const velocity: Partial<Record<(typeof VELOCITY_FIELDS)[number], number>> = {};
  for (const field of VELOCITY_FIELDS) {
    const count = policy[field];
    if (count != null) velocity[field] = Number(count);
  }
  // Budgets (docs/ledger.md "Budgets"), only when set: a policy without them reads as before.
  const budgets: { day_budget_units?: string; week_budget_units?: string; month_budget_units?: string; budget_alert_percentages?: number[]; targets?: { target_id: string; month_cap_units?: string }[] } = {};
  for (const field of ['day_budget_units', 'week_budget_units', 'month_budget_units'] as const) {
    const units = policy[field];
    if (units != null) budgets[field] = units.toString();
  }
  if (policy.budget_alert_percentages != null) budgets.budget_alert_percentages = [...policy.budget_alert_percentages];
  if (policy.targets != null) {
    budgets.targets = policy.targets.map((target) => ({ target_id: target.target_id, ...(target.month_cap_units === null ? {} : { month_cap_units: target.month_cap_units.toString() }) }));
  }
  return {
    per_authorization_cap_units: policy.per_authorization_cap_units.toString(),
    daily_cap_units: policy.daily_cap_units.toString(),
    approval_threshold_units: policy.approval_threshold_units.toString(),
    units_scale: UNITS_SCALE,
    currency: 'USD' as const,
    ...velocity,
    ...budgets,
  };
}

function requireAbsolute(path: string): void {
  if (!isAbsolute(path)) {
    throw new UsageError('policy_file_not_absolute', 'The policy file path must be absolute; got a relative path.', {
      nextStep: 'Pass the full path, for example "$PWD/policy.json".',
    });
  }
}

/**
 * Writes a new policy file; an existing file is never replaced (it may hold an operator's
 * edits). Missing parent directories are created.
 */
export async function writePolicyFile(path: string, policy: SpendPolicy): Promise<void> {
  requireAbsolute(path);
  const content = `${JSON.stringify(policyFileDocument(policy), null, 2)}\n`;
  let outcome;
  try {
    await mkdir(dirname(path), { recursive: true });
    outcome = await writeNewFile(path, content, 0o644);
  } catch (error) {
    const code = errorCode(error) ?? 'error';
    throw new UserError('policy_file_unwritable', `The policy file ${path} cannot be written (${code}).`, {
      nextStep: 'Check that its directory exists or can be created, and is writable by this user.',
    });
  }
  if (outcome === 'exists') {
    throw new UserError('policy_file_exists', `The policy file ${path} already exists; lexec does not overwrite it.`, {
      nextStep: 'Choose a new path, or remove the old file first.',
    });
  }
}

/** readJsonDocument speaks of configuration files; a policy file has its own codes and next steps. */
const READ_ERRORS: Record<string, { code: string; nextStep: string }> = {
  config_not_found: { code: 'policy_file_not_found', nextStep: 'Check the path, or create a starter file with `lexec ledger policy init --file <path>`.' },
  config_not_a_file: { code: 'policy_file_unreadable', nextStep: 'Point --file at the JSON policy file itself.' },
  config_unreadable: { code: 'policy_file_unreadable', nextStep: 'Check the permissions of the file and of its directories.' },
  config_too_large: { code: 'policy_file_unreadable', nextStep: 'Point --file at the JSON policy file itself.' },
  config_not_json: { code: 'policy_file_not_json', nextStep: 'Fix the JSON syntax at that position.' },
  config_duplicate_keys: { code: 'policy_file_invalid', nextStep: 'Keep one entry for each key listed.' },
};

/** Reads and validates a policy file locally, reporting every problem with its field path. */
export async function readPolicyFile(path: string): Promise<SpendPolicyInput> {
  requireAbsolute(path);
  let document: unknown;
  try {
    document = await readJsonDocument(path, 'policy file');
  } catch (error) {
    const mapped = error instanceof UserError ? READ_ERRORS[error.code] : undefined;
    if (error instanceof UserError && mapped !== undefined) {
      throw new UserError(mapped.code, error.message, { nextStep: mapped.nextStep, issues: error.issues });
    }
    throw error;
  }
  const parsed = spendPolicySchema.safeParse(document, { reportInput: true });
  if (!parsed.success) {
    const issues = toFieldIssues(parsed.error.issues);
    throw new UserError('policy_file_invalid', `The policy file ${path} has ${issues.length} problem${issues.length === 1 ? '' : 's'}.`, {
      nextStep: 'Fix each field listed (amounts are whole micro-units as digit strings: 1 USD = "1000000"), then try again.',
      issues,
    });
  }
  // A policy file is the whole policy: a velocity field it leaves out is not set (sent as null,
  // which removes it), whereas a PUT body that leaves one out keeps it (docs/decisions.md).
  return {
    ...parsed.data,
    max_requests_per_minute: parsed.data.max_requests_per_minute ?? null,
    max_requests_per_hour: parsed.data.max_requests_per_hour ?? null,
    suspend_after_velocity_refusals: parsed.data.suspend_after_velocity_refusals ?? null,
    day_budget_units: parsed.data.day_budget_units ?? null,
    week_budget_units: parsed.data.week_budget_units ?? null,
    month_budget_units: parsed.data.month_budget_units ?? null,
    budget_alert_percentages: parsed.data.budget_alert_percentages ?? null,
    targets: parsed.data.targets ?? null,
  };
}
