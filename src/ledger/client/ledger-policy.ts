import type { SpendPolicy } from '../authorization-rules.js';
import type { LedgerBudgetStanding, LedgerPolicy } from '../wire/answers.js';
import { policyFileDocument, readPolicyFile, STARTER_POLICY, writePolicyFile } from '../policy-file.js';
import { resolveAgentId, type AgentChoice } from './agent-choice.js';
import type { LedgerConnector } from './ledger-connector.js';

export interface PolicyShowResult {
  readonly policy: LedgerPolicy;
  /** Each calendar budget over the agent (its own and the installation's) in the current period. */
  readonly budgets: readonly LedgerBudgetStanding[];
  /** The installation's time zone the periods are cut in (null from an older ledger). */
  readonly time_zone: string | null;
  /** The policy file written by `--export`, or null. */
  readonly exported_to: string | null;
}

export interface PolicySetResult {
  readonly policy: LedgerPolicy;
  readonly policy_file: string;
  /** The version the change was made from (`--expect-version`), or null: set whatever the version. */
  readonly expected_version: bigint | null;
}

export interface PolicyInitResult {
  readonly policy_file: string;
  readonly policy: ReturnType<typeof policyFileDocument>;
}

/** `ledger policy show` (admin token); with an export path, also writes it as a policy file. */
export async function showLedgerPolicy(request: { readonly target: LedgerConnector; readonly agent: AgentChoice; readonly exportTo: string | null }): Promise<PolicyShowResult> {
  const client = await request.target('admin');
  const agentId = await resolveAgentId(client, request.agent);
  const policy = await client.policy(agentId);
  if (request.exportTo !== null) await writePolicyFile(request.exportTo, policy);
  const standing = await client.agentSpending(agentId);
  return { policy, budgets: standing.budgets, time_zone: standing.time_zone, exported_to: request.exportTo };
}

/**
 * `ledger policy set` (admin token): the file is validated locally before anything is sent,
 * so a mistake is reported with every field path; then it replaces the agent's policy — with an
 * expected version, only if the policy is still at it (else `ledger_policy_version_mismatch`,
 * nothing changed), so a change made from what `policy show` showed never overwrites another.
 */
export async function setLedgerPolicy(request: {
  readonly target: LedgerConnector;
  readonly agent: AgentChoice;
  readonly file: string;
  readonly expectVersion: bigint | null;
}): Promise<PolicySetResult> {
  const client = await request.target('admin');
  const policy = await readPolicyFile(request.file);
  const agentId = await resolveAgentId(client, request.agent);
  return { policy: await client.setPolicy(agentId, policy, request.expectVersion), policy_file: request.file, expected_version: request.expectVersion };
}

/** `ledger policy init`: local only — writes a starter policy file; no ledger, no token. */
export async function initPolicyFile(file: string, policy: SpendPolicy = STARTER_POLICY): Promise<PolicyInitResult> {
  await writePolicyFile(file, policy);
  return { policy_file: file, policy: policyFileDocument(policy) };
}
