import { createHash, randomBytes, randomUUID } from 'node:crypto';
import type Database from 'better-sqlite3';
import { digestLookup, digestsEqual } from '../credentials/capability.js';
import type { CredentialLifecycle } from './credential-lifecycle.js';
import type { LedgerAdmin } from './ledger-admin.js';
import { LedgerError, notFound } from './ledger-error.js';
import { createAuditStore, LEDGER_ACTOR, type CredentialActor } from './store/audit-store.js';
import { immediateTransaction } from './store/immediate-transaction.js';
import type { LedgerAgent } from './wire/answers.js';

/*
 * Enrolment of executor hosts (ledger migration 15; docs/deployment.md "Enrolment"). The ledger
 * host's operator issues a one-time token for a named executor host; the host redeems it once
 * with the SHA-256 digests of the executor→ledger and agent capabilities it generated and keeps.
 * The ledger registers both under ids of its own making, in one IMMEDIATE transaction with the
 * token's redemption and its audit event: a refused redemption (used, expired, revoked, a
 * conflicting credential) registers nothing and leaves the token as it was. No capability, not
 * even a new one, crosses the network: only the token (once) and digests. The ledger's admin
 * capability never leaves the ledger host. Only the token's digest is stored.
 */

export const ENROLMENT_TOKEN_PATTERN = /^lexec_enrolment_[A-Za-z0-9_-]{43}$/;
export const MAX_ENROLMENT_TTL_MINUTES = 7 * 24 * 60;
export const DEFAULT_ENROLMENT_TTL_MINUTES = 60;

export type EnrolmentStatus = 'open' | 'redeemed' | 'revoked' | 'expired';

/** An enrolment as the API shows it: never its token or digest. */
export interface EnrolmentView {
  readonly enrolment_id: string;
  readonly host_name: string;
  readonly agent_name: string;
  readonly status: EnrolmentStatus;
  readonly issued_at: string;
  readonly expires_at: string;
  readonly redeemed_at: string | null;
  readonly revoked_at: string | null;
  readonly agent_id: string | null;
  readonly executor_credential_id: string | null;
  readonly agent_credential_id: string | null;
}

interface EnrolmentRow {
  enrolment_id: string;
  host_name: string;
  agent_name: string;
  token_lookup: string;
  token_digest: Buffer;
  issued_by: string;
  issued_at: bigint;
  expires_at: bigint;
  redeemed_at: bigint | null;
  revoked_at: bigint | null;
  agent_id: string | null;
  executor_credential_id: string | null;
  agent_credential_id: string | null;
}

export interface RedemptionInput {
  /** The host's [agent].name: must be the agent the token was issued for. */
  readonly agentName: string;
  readonly executorDigest: Buffer;
  readonly agentDigest: Buffer;
}

export interface Redemption {
  readonly enrolment_id: string;
  readonly host_name: string;
  readonly agent: LedgerAgent;
  readonly executor_credential_id: string;
  readonly agent_credential_id: string;
}

const iso = (ms: bigint | number) => new Date(Number(ms)).toISOString();
const tokenDigest = (token: string) => createHash('sha256').update(token, 'utf8').digest();

function statusOf(row: EnrolmentRow, now: number): EnrolmentStatus {
  if (row.redeemed_at !== null) return 'redeemed';
  if (row.revoked_at !== null) return 'revoked';
  return Number(row.expires_at) <= now ? 'expired' : 'open';
}

function view(row: EnrolmentRow, now: number): EnrolmentView {
  return {
    enrolment_id: row.enrolment_id,
    host_name: row.host_name,
    agent_name: row.agent_name,
    status: statusOf(row, now),
    issued_at: iso(row.issued_at),
    expires_at: iso(row.expires_at),
    redeemed_at: row.redeemed_at === null ? null : iso(row.redeemed_at),
    revoked_at: row.revoked_at === null ? null : iso(row.revoked_at),
    agent_id: row.agent_id,
    executor_credential_id: row.executor_credential_id,
    agent_credential_id: row.agent_credential_id,
  };
}

/** Why a presented token is not redeemed; the route answers 403 `enrolment_refused` with it. */
const refused = (reason: 'enrolment_token_used' | 'enrolment_token_expired' | 'enrolment_token_revoked' | 'enrolment_agent_mismatch') =>
  new LedgerError('forbidden', 'enrolment_refused', { reasonCode: reason });

export type ExecutorEnrolments = ReturnType<typeof createExecutorEnrolments>;

export function createExecutorEnrolments({ db, now, admin, credentials }: { db: Database.Database; now: () => number; admin: LedgerAdmin; credentials: CredentialLifecycle }) {
  const audit = createAuditStore(db);
  const immediate = immediateTransaction(db);
  const statements = {
    insert: db.prepare(
      `INSERT INTO enrolments (enrolment_id, host_name, agent_name, token_lookup, token_digest, issued_by, issued_at, expires_at)
       VALUES (@enrolment_id, @host_name, @agent_name, @token_lookup, @token_digest, @issued_by, @issued_at, @expires_at)`,
    ),
    byId: db.prepare('SELECT * FROM enrolments WHERE enrolment_id = ?'),
    byLookup: db.prepare('SELECT * FROM enrolments WHERE token_lookup = ?'),
    list: db.prepare('SELECT * FROM enrolments ORDER BY issued_at, enrolment_id'),
    revoke: db.prepare('UPDATE enrolments SET revoked_at = ? WHERE enrolment_id = ?'),
    redeem: db.prepare(
      `UPDATE enrolments SET redeemed_at = @at, agent_id = @agent_id, executor_credential_id = @executor_credential_id, agent_credential_id = @agent_credential_id
       WHERE enrolment_id = @enrolment_id`,
    ),
  };
  const row = (id: string) => statements.byId.get(id) as EnrolmentRow | undefined;

  return {
    /** A new one-time token for `hostName` (its agent: `agentName`); the token is answered once and never stored. */
    issue(input: { hostName: string; agentName: string; ttlMinutes: number }, actor: CredentialActor): { enrolment: EnrolmentView; token: string } {
      const token = `lexec_enrolment_${randomBytes(32).toString('base64url')}`;
      const digest = tokenDigest(token);
      return immediate(() => {
        const at = now();
        const enrolmentId = `enr_${randomUUID()}`;
        statements.insert.run({
          enrolment_id: enrolmentId,
          host_name: input.hostName,
          agent_name: input.agentName,
          token_lookup: digestLookup(digest),
          token_digest: digest,
          issued_by: actor.credential_id,
          issued_at: at,
          expires_at: at + input.ttlMinutes * 60_000,
        });
        const issued = row(enrolmentId);
        if (issued === undefined) throw new Error('an enrolment vanished in its own transaction');
        audit.record({ actor, action: 'enrolment_issued', agentId: null, subjectId: enrolmentId, after: { host_name: input.hostName, agent_name: input.agentName, status: 'open', expires_at: iso(issued.expires_at) }, at });
        return { enrolment: view(issued, at), token };
      });
    },

    list(): EnrolmentView[] {
      const at = now();
      return (statements.list.all() as EnrolmentRow[]).map((entry) => view(entry, at));
    },

    /** Revokes an open token; a redeemed, revoked or expired one is left as it is (`changed: false`). */
    revoke(enrolmentId: string, actor: CredentialActor): { enrolment: EnrolmentView; changed: boolean } {
      return immediate(() => {
        const at = now();
        const current = row(enrolmentId);
        if (current === undefined) throw notFound();
        const before = statusOf(current, at);
        if (before !== 'open') return { enrolment: view(current, at), changed: false };
        statements.revoke.run(at, enrolmentId);
        audit.record({ actor, action: 'enrolment_revoked', agentId: null, subjectId: enrolmentId, before: { status: 'open' }, after: { status: 'revoked' }, at });
        return { enrolment: view(row(enrolmentId) ?? current, at), changed: true };
      });
    },

    /**
     * Redeems a token, once: null for a token the ledger never issued (the route's 401). The
     * agent is found by name or added; both credentials are registered under ids derived from the
     * host name and their digests; all in one transaction with the redemption and its audit event.
     */
    redeem(token: string, input: RedemptionInput): Redemption | null {
      if (!ENROLMENT_TOKEN_PATTERN.test(token)) return null;
      const digest = tokenDigest(token);
      return immediate(() => {
        const at = now();
        const current = statements.byLookup.get(digestLookup(digest)) as EnrolmentRow | undefined;
        if (current === undefined || !digestsEqual(current.token_digest, digest)) return null;
        const status = statusOf(current, at);
        if (status === 'redeemed') throw refused('enrolment_token_used');
        if (status === 'revoked') throw refused('enrolment_token_revoked');
        if (status === 'expired') throw refused('enrolment_token_expired');
        if (input.agentName !== current.agent_name) throw refused('enrolment_agent_mismatch');
        const agent = admin.listAgents().find((candidate) => candidate.name === current.agent_name) ?? admin.addAgent(current.agent_name, LEDGER_ACTOR);
        const suffix = (d: Buffer) => d.toString('hex').slice(0, 16);
        const executorCredentialId = `lexec-enrol-${current.host_name}-executor-${suffix(input.executorDigest)}`.slice(0, 128);
        const agentCredentialId = `lexec-enrol-${current.host_name}-agent-${suffix(input.agentDigest)}`.slice(0, 128);
        credentials.register({ credentialId: executorCredentialId, kind: 'executor', agentId: null, digest: input.executorDigest, holderName: current.host_name, actor: LEDGER_ACTOR });
        credentials.register({ credentialId: agentCredentialId, kind: 'agent', agentId: agent.agent_id, digest: input.agentDigest, holderName: current.host_name, actor: LEDGER_ACTOR });
        statements.redeem.run({ at, agent_id: agent.agent_id, executor_credential_id: executorCredentialId, agent_credential_id: agentCredentialId, enrolment_id: current.enrolment_id });
        audit.record({
          actor: LEDGER_ACTOR,
          action: 'enrolment_redeemed',
          agentId: agent.agent_id,
          subjectId: current.enrolment_id,
          before: { status: 'open' },
          after: { status: 'redeemed', host_name: current.host_name, executor_credential_id: executorCredentialId, agent_credential_id: agentCredentialId },
          at,
        });
        return { enrolment_id: current.enrolment_id, host_name: current.host_name, agent, executor_credential_id: executorCredentialId, agent_credential_id: agentCredentialId };
      });
    },
  };
}
