// Set-up shared by the benchmarks that run a real ledger and executor: managed executor
// credentials from the real CLI, agents whose policy approves everything the run asks for, the
// authorizations the run will use, and read-only access to the databases for verification.
import { spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import { childEnv } from './children.mjs';
import { fail } from './harness.mjs';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');

/** Caps and threshold far above any benchmark run: every authorization is approved by policy. */
export const BIG_CAP = '1000000000000000000';
/** One agent per this many authorizations, so the ledger's daily-cap sum per request stays small. */
export const AUTHORIZATIONS_PER_AGENT = 1000;

/** The real `lexec executor credentials bootstrap-managed`; its output never contains a capability. */
export function bootstrapManaged(workDir, configPath, adminCapabilityPath, timeoutMs = 60_000) {
  const run = spawnSync(
    process.execPath,
    ['bin/run.js', 'executor', 'credentials', 'bootstrap-managed', '--config', configPath, '--ledger-admin-capability', adminCapabilityPath, '--json'],
    { cwd: root, env: childEnv(workDir), encoding: 'utf8', timeout: timeoutMs },
  );
  if (run.status !== 0) fail(`executor credentials bootstrap-managed failed (${run.error?.message ?? run.signal ?? `exit ${run.status}`}): ${`${run.stdout ?? ''}${run.stderr ?? ''}`.trim().slice(0, 1000)}`);
}

/** A database opened read-only, integers as bigint. */
export function openReadOnly(path) {
  const db = new Database(path, { readonly: true, fileMustExist: true });
  db.defaultSafeIntegers(true);
  return db;
}

/**
 * An agent (named `${name}-${index}`) with a policy that approves everything and a fresh agent
 * capability registered by its digest. `request(step, status, method, path, token, body)` is the
 * script's checked ledger call and resolves with the answer body.
 */
async function setUpAgent({ request, adminToken, capability, name }, index) {
  const created = await request('add agent', 201, 'POST', '/agents', adminToken, { name: `${name}-${index}` });
  const agentId = created.agent.agent_id;
  const policy = await request('set policy', 200, 'PUT', `/agents/${agentId}/policy`, adminToken, {
    per_authorization_cap_units: BIG_CAP,
    daily_cap_units: BIG_CAP,
    approval_threshold_units: BIG_CAP,
    units_scale: 6,
    currency: 'USD',
  });
  if (policy.policy.approval_threshold_units !== BIG_CAP) fail(`set policy: the ledger kept an approval threshold of ${policy.policy.approval_threshold_units}.`);
  const token = capability.generateCapability('agent');
  await request('register agent credential', 201, 'PUT', `/credentials/cred_${randomUUID()}`, adminToken, {
    kind: 'agent',
    agent_id: agentId,
    digest_sha256: capability.capabilityDigest(token).toString('hex'),
  });
  return { agentId, token };
}

/**
 * Requests `count` authorizations of `holdUnits` (8 at a time), AUTHORIZATIONS_PER_AGENT per
 * agent; each must be approved by policy at once. `capability` is lexec's built capability module.
 */
export async function preCreateAuthorizations({ request, adminToken, capability, name, count, holdUnits }) {
  const setUp = { request, adminToken, capability, name };
  const agents = [];
  for (let index = 0; index * AUTHORIZATIONS_PER_AGENT < count; index += 1) agents.push(await setUpAgent(setUp, index));
  const tokens = new Array(count);
  let next = 0;
  const body = JSON.stringify({ amount_units: holdUnits, units_scale: 6, currency: 'USD', purpose: name });
  const loop = async () => {
    while (next < count) {
      const index = next++;
      const agentToken = agents[Math.floor(index / AUTHORIZATIONS_PER_AGENT)].token;
      const answer = await request('request authorization', 201, 'POST', '/authorizations', agentToken, body);
      if (answer.authorization?.status !== 'approved') fail(`request authorization: expected approved by policy, got ${JSON.stringify(answer.authorization?.status)}.`);
      tokens[index] = answer.authorization.token_id;
    }
  };
  await Promise.all(Array.from({ length: 8 }, loop));
  return { tokens, agents: agents.length };
}
