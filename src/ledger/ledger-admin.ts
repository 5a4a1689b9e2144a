import type { LedgerAgent, LedgerPolicy } from './wire/answers.js';
import { randomUUID } from 'node:crypto';
import type Database from 'better-sqlite3';
import { capabilityDigest, digestLookup, digestsEqual, type CredentialKind } from '../credentials/capability.js';
import { UNITS_SCALE } from '../domain/money.js';
import { conflict, notFound, unprocessable } from './ledger-error.js';
import type { SpendPolicy } from './authorization-rules.js';

/** The identity a request authenticated as. */
export interface Principal {
  readonly credential_id: string;
  readonly kind: CredentialKind;
  readonly agent_id: string | null;
}

export type RegisterOutcome = 'created' | 'unchanged';

interface PolicyRow extends SpendPolicy {
  agent_id: string;
  version: bigint;
  updated_at: bigint;
  follows_default: bigint;
}

export type LedgerAdmin = ReturnType<typeof createLedgerAdmin>;

export function createLedgerAdmin({ db, now, defaultPolicy }: { db: Database.Database; now: () => number; defaultPolicy: SpendPolicy }) {
  const credentialByLookup = db.prepare('SELECT credential_id, kind, agent_id, digest FROM credentials WHERE lookup = ?');
  const immediate = <T>(fn: () => T): T => db.transaction(fn).immediate();

  const agentView = (row: { agent_id: string; name: string; status: string; created_at: bigint }): LedgerAgent => ({
    agent_id: row.agent_id,
    name: row.name,
    status: row.status,
    created_at: new Date(Number(row.created_at)).toISOString(),
  });

  const policyView = (row: PolicyRow): LedgerPolicy => ({
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
  });

  const defaultParameters = () => ({
    cap: defaultPolicy.per_authorization_cap_units,
    daily: defaultPolicy.daily_cap_units,
    threshold: defaultPolicy.approval_threshold_units,
  });

  function requireAgent(agentId: string) {
    const row = db.prepare('SELECT * FROM agents WHERE agent_id = ?').get(agentId) as
      | { agent_id: string; name: string; status: string; created_at: bigint }
      | undefined;
    if (!row) throw notFound();
    return row;
  }

  return {
    /** Finds the credential a presented capability belongs to; constant-time on the digest. */
    authenticate(token: string): Principal | null {
      const digest = capabilityDigest(token);
      const row = credentialByLookup.get(digestLookup(digest)) as
        | { credential_id: string; kind: CredentialKind; agent_id: string | null; digest: Buffer }
        | undefined;
      if (!row || !digestsEqual(row.digest, digest)) return null;
      return { credential_id: row.credential_id, kind: row.kind, agent_id: row.agent_id };
    },

    /**
     * Registers a credential by the digest of a capability the caller generated and keeps.
     * Idempotent: the same id with the same kind, agent and digest is `unchanged`; any
     * difference is a conflict (fail closed), never an overwrite.
     */
    registerCredential(credentialId: string, kind: CredentialKind, agentId: string | null, digest: Buffer): RegisterOutcome {
      return immediate(() => {
        if ((kind === 'agent') !== (agentId !== null)) throw unprocessable('invalid_credential', 'agent_id_required_for_agent_kind_only', ['agent_id']);
        if (agentId !== null) requireAgent(agentId);
        const existing = db.prepare('SELECT kind, agent_id, digest FROM credentials WHERE credential_id = ?').get(credentialId) as
          | { kind: string; agent_id: string | null; digest: Buffer }
          | undefined;
        if (existing) {
          if (existing.kind === kind && existing.agent_id === agentId && digestsEqual(existing.digest, digest)) return 'unchanged';
          throw conflict('credential_exists');
        }
        if (credentialByLookup.get(digestLookup(digest))) throw conflict('credential_exists');
        db.prepare('INSERT INTO credentials (credential_id, kind, agent_id, lookup, digest, created_at) VALUES (?, ?, ?, ?, ?, ?)').run(
          credentialId,
          kind,
          agentId,
          digestLookup(digest),
          digest,
          now(),
        );
        return 'created';
      });
    },

    /** The digest stored for the admin credential, if any. */
    adminDigest(): Buffer | null {
      const row = db.prepare("SELECT digest FROM credentials WHERE credential_id = 'admin'").get() as { digest: Buffer } | undefined;
      return row?.digest ?? null;
    },

    addAgent(name: string) {
      return immediate(() => {
        if (db.prepare('SELECT 1 FROM agents WHERE name = ?').get(name)) throw conflict('agent_exists', ['name']);
        const agentId = `agt_${randomUUID()}`;
        const at = now();
        db.prepare("INSERT INTO agents (agent_id, name, status, created_at) VALUES (?, ?, 'active', ?)").run(agentId, name, at);
        db.prepare(
          `INSERT INTO policies (agent_id, per_authorization_cap_units, daily_cap_units, approval_threshold_units, units_scale, currency, version, updated_at, follows_default)
           VALUES (?, ?, ?, ?, 6, 'USD', 1, ?, 1)`,
        ).run(agentId, defaultPolicy.per_authorization_cap_units, defaultPolicy.daily_cap_units, defaultPolicy.approval_threshold_units, at);
        return agentView(requireAgent(agentId));
      });
    },

    /**
     * Applies the configured default policy to every agent that follows it (never given its own
     * with \`ledger policy set\`): called once when the ledger starts, so a changed
     * \`[ledger.default_policy]\` — a lowered cap included — holds from that start on. A policy that
     * changes gets a new version. Returns the agents changed.
     */
    applyDefaultPolicy(): string[] {
      return immediate(() => {
        const changed = db
          .prepare(
            `SELECT agent_id FROM policies WHERE follows_default = 1
               AND (per_authorization_cap_units != @cap OR daily_cap_units != @daily OR approval_threshold_units != @threshold)
             ORDER BY agent_id`,
          )
          .all(defaultParameters()) as { agent_id: string }[];
        db.prepare(
          `UPDATE policies SET per_authorization_cap_units = @cap, daily_cap_units = @daily, approval_threshold_units = @threshold,
             version = version + 1, updated_at = @now
           WHERE follows_default = 1
             AND (per_authorization_cap_units != @cap OR daily_cap_units != @daily OR approval_threshold_units != @threshold)`,
        ).run({ ...defaultParameters(), now: now() });
        return changed.map((row) => row.agent_id);
      });
    },

    listAgents() {
      const rows = db.prepare('SELECT * FROM agents ORDER BY created_at, name').all() as { agent_id: string; name: string; status: string; created_at: bigint }[];
      return rows.map(agentView);
    },

    policy(agentId: string) {
      requireAgent(agentId);
      return policyView(db.prepare('SELECT * FROM policies WHERE agent_id = ?').get(agentId) as PolicyRow);
    },

    setPolicy(agentId: string, policy: SpendPolicy) {
      return immediate(() => {
        requireAgent(agentId);
        db.prepare(
          `UPDATE policies SET per_authorization_cap_units = ?, daily_cap_units = ?, approval_threshold_units = ?, version = version + 1, updated_at = ?,
             follows_default = 0
           WHERE agent_id = ?`,
        ).run(policy.per_authorization_cap_units, policy.daily_cap_units, policy.approval_threshold_units, now(), agentId);
        return policyView(db.prepare('SELECT * FROM policies WHERE agent_id = ?').get(agentId) as PolicyRow);
      });
    },
  };
}
