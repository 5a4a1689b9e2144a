import type Database from 'better-sqlite3';
import type { LedgerAgent, LedgerPolicy } from '../wire/answers.js';
import type { CredentialKind } from '../../credentials/capability.js';
import { UNITS_SCALE } from '../../domain/money.js';
import { redactSecretShapes } from '../../domain/secret-text.js';
import type { SpendPolicy } from '../authorization-rules.js';
import { immediateTransaction } from './immediate-transaction.js';

/*
 * The ledger's SQL for credentials, agents and their policies (the admin's use cases,
 * ledger-admin.ts): prepared statements, the transaction they run in, rows mapped to the API's
 * views. It decides nothing: what is a conflict or not found is the use cases'.
 */

export interface AgentRow {
  agent_id: string;
  name: string;
  status: 'active' | 'suspended';
  created_at: bigint;
  /** Set exactly while suspended (migration 5). */
  suspended_at: bigint | null;
  suspension_reason: string | null;
}

export interface PolicyRow extends SpendPolicy {
  agent_id: string;
  version: bigint;
  updated_at: bigint;
  follows_default: bigint;
}

export interface CredentialRow {
  credential_id: string;
  kind: CredentialKind;
  agent_id: string | null;
  digest: Buffer;
}

export function agentView(row: AgentRow): LedgerAgent {
  return {
    agent_id: row.agent_id,
    name: row.name,
    status: row.status,
    created_at: new Date(Number(row.created_at)).toISOString(),
    suspended_at: row.suspended_at === null ? null : new Date(Number(row.suspended_at)).toISOString(),
    // Text is refused when secret-shaped; redacted all the same, as every free text the ledger shows.
    suspension_reason: row.suspension_reason === null ? null : redactSecretShapes(row.suspension_reason),
  };
}

export function policyView(row: PolicyRow): LedgerPolicy {
  return {
    agent_id: row.agent_id,
    per_authorization_cap_units: row.per_authorization_cap_units,
    daily_cap_units: row.daily_cap_units,
    approval_threshold_units: row.approval_threshold_units,
    units_scale: UNITS_SCALE,
    currency: 'USD',
    version: row.version,
    updated_at: new Date(Number(row.updated_at)).toISOString(),
    /** `default`: the configured default, applied again at every ledger start; `operator`: set with `ledger policy set`. */
    source: row.follows_default === 1n ? ('default' as const) : ('operator' as const),
  };
}

export type AdminStore = ReturnType<typeof createAdminStore>;

export function createAdminStore(db: Database.Database) {
  // Prepared once, as in ledger-store.ts.
  const statements = {
    credentialByLookup: db.prepare('SELECT credential_id, kind, agent_id, digest FROM credentials WHERE lookup = ?'),
    credentialById: db.prepare('SELECT kind, agent_id, digest FROM credentials WHERE credential_id = ?'),
    insertCredential: db.prepare(
      'INSERT INTO credentials (credential_id, kind, agent_id, lookup, digest, created_at) VALUES (?, ?, ?, ?, ?, ?)',
    ),
    adminDigest: db.prepare("SELECT digest FROM credentials WHERE credential_id = 'admin'"),
    agentById: db.prepare('SELECT * FROM agents WHERE agent_id = ?'),
    agentByName: db.prepare('SELECT 1 FROM agents WHERE name = ?'),
    agents: db.prepare('SELECT * FROM agents ORDER BY created_at, name'),
    insertAgent: db.prepare(
      "INSERT INTO agents (agent_id, name, status, created_at) VALUES (?, ?, 'active', ?)",
    ),
    policyOf: db.prepare('SELECT * FROM policies WHERE agent_id = ?'),
    insertDefaultPolicy: db.prepare(
      `INSERT INTO policies (agent_id, per_authorization_cap_units, daily_cap_units, approval_threshold_units, units_scale, currency, version, updated_at, follows_default)
       VALUES (?, ?, ?, ?, 6, 'USD', 1, ?, 1)`,
    ),
    followersToChange: db.prepare(
      `SELECT agent_id FROM policies WHERE follows_default = 1
         AND (per_authorization_cap_units != @cap OR daily_cap_units != @daily OR approval_threshold_units != @threshold)
       ORDER BY agent_id`,
    ),
    applyDefault: db.prepare(
      `UPDATE policies SET per_authorization_cap_units = @cap, daily_cap_units = @daily, approval_threshold_units = @threshold,
         version = version + 1, updated_at = @now
       WHERE follows_default = 1
         AND (per_authorization_cap_units != @cap OR daily_cap_units != @daily OR approval_threshold_units != @threshold)`,
    ),
    setPolicy: db.prepare(
      `UPDATE policies SET per_authorization_cap_units = ?, daily_cap_units = ?, approval_threshold_units = ?, version = version + 1, updated_at = ?,
         follows_default = 0
       WHERE agent_id = ?`,
    ),
  };

  const defaultParameters = (policy: SpendPolicy) => ({
    cap: policy.per_authorization_cap_units,
    daily: policy.daily_cap_units,
    threshold: policy.approval_threshold_units,
  });

  return {
    /** Runs `fn` in one IMMEDIATE transaction: what it reads, checks and writes commits together. */
    immediate: immediateTransaction(db),

    credentialByLookup: (lookup: string) => statements.credentialByLookup.get(lookup) as CredentialRow | undefined,
    credentialById: (credentialId: string) => statements.credentialById.get(credentialId) as Omit<CredentialRow, 'credential_id'> | undefined,
    insertCredential(credential: { credentialId: string; kind: CredentialKind; agentId: string | null; lookup: string; digest: Buffer; at: number }): void {
      statements.insertCredential.run(credential.credentialId, credential.kind, credential.agentId, credential.lookup, credential.digest, credential.at);
    },
    adminDigest: () => (statements.adminDigest.get() as { digest: Buffer } | undefined)?.digest,

    agent: (agentId: string) => statements.agentById.get(agentId) as AgentRow | undefined,
    agentNamed: (name: string) => statements.agentByName.get(name) !== undefined,
    agents: () => statements.agents.all() as AgentRow[],
    insertAgent(agentId: string, name: string, at: number): void {
      statements.insertAgent.run(agentId, name, at);
    },
    /** The agent's first policy (version 1), following the default. */
    insertDefaultPolicy(agentId: string, policy: SpendPolicy, at: number): void {
      statements.insertDefaultPolicy.run(agentId, policy.per_authorization_cap_units, policy.daily_cap_units, policy.approval_threshold_units, at);
    },

    policy: (agentId: string) => statements.policyOf.get(agentId) as PolicyRow,
    /** The agents that follow the default policy and whose policy differs from `policy`, by agent id. */
    followersToChange: (policy: SpendPolicy) => (statements.followersToChange.all(defaultParameters(policy)) as { agent_id: string }[]).map((row) => row.agent_id),
    /** Gives every agent that follows the default policy `policy`, with a new version where it changes. */
    applyDefault(policy: SpendPolicy, at: number): void {
      statements.applyDefault.run({ ...defaultParameters(policy), now: at });
    },
    /** The agent's own policy, with a new version; it no longer follows the default. */
    setPolicy(agentId: string, policy: SpendPolicy, at: number): void {
      statements.setPolicy.run(policy.per_authorization_cap_units, policy.daily_cap_units, policy.approval_threshold_units, at, agentId);
    },
  };
}
