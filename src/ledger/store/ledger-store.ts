import type Database from 'better-sqlite3';
import type { LedgerAuthorization } from '../wire/answers.js';
import type { AuthorizationStatus, SpendPolicy } from '../authorization-rules.js';
import { policyOf, type StoredPolicyRow } from './admin-store.js';
import { WINDOW_SUMS } from './counted-units.js';
import { immediateTransaction, readTransaction } from './immediate-transaction.js';
import {
  authorizationView,
  recordView,
  type AuthorizationRow,
  type ReconciliationRecordRow,
  type ReconciliationRecordView,
  type ReleaseRow,
  type SettlementRow,
} from './ledger-rows.js';

/*
 * The ledger's SQL for authorizations, their settlements and releases, reconciliation records
 * and the owner account: prepared statements, the transaction the use cases run in
 * (`immediate`), and rows mapped to the API's views. It decides nothing: which status an
 * authorization may move to, and what is refused, is the use cases' (src/ledger/use-cases/).
 */

/** A new authorization, as its use case decided it. */
export interface NewAuthorization {
  readonly tokenId: string;
  readonly accountId: string;
  readonly agentId: string;
  readonly amountUnits: bigint;
  readonly currency: string;
  readonly amountCents: bigint;
  readonly status: 'approved' | 'requested';
  readonly purpose: string | null;
  readonly decidedBy: string | null;
  readonly decidedAt: number | null;
  readonly createdAt: number;
  readonly expiresAt: number;
  readonly policyVersion: bigint | null;
  readonly policy: SpendPolicy;
  /** The agent's `Idempotency-Key` and the fingerprint of the request it came with; both null without a key. */
  readonly idempotency: { readonly key: string; readonly fingerprint: string } | null;
  /** The executor target and the prompt it pays for (null when the request named none). */
  readonly targetId: string | null;
  readonly prompt: string | null;
}

/** An approver's decision on a requested authorization (`closedAt`: set for a denial). */
export interface Decision {
  readonly status: 'approved' | 'denied';
  readonly decidedBy: string;
  /** The named approver's name, kept with the decision. */
  readonly decidedByName: string | null;
  readonly reason: string | null;
  readonly decidedAt: number;
  readonly closedAt: number | null;
}

/** A settlement of a claimed authorization by a receipt (amounts in micro-units, cents rounded up). */
export interface NewSettlement {
  readonly settlementId: string;
  readonly tokenId: string;
  readonly receiptId: string;
  readonly executionId: string;
  readonly receiptShape: 'precise' | 'legacy_cents';
  readonly amountUnits: bigint;
  readonly currency: string;
  readonly amountCents: bigint;
  readonly providerRequestId: string | null;
  readonly priceModelSnapshot: string;
  readonly receiptFingerprint: string;
  readonly at: number;
}

/** An agent's amounts in a window: `since` exclusive, holds still live at `now`. */
export interface AgentWindow {
  readonly agentId: string;
  readonly now: number;
  readonly since: number;
}

export type LedgerStore = ReturnType<typeof createLedgerStore>;

export function createLedgerStore(db: Database.Database) {
  // Every statement is prepared once: preparing costs about 10 µs a time, on every request.
  const statements = {
    authorizationById: db.prepare('SELECT * FROM authorizations WHERE token_id = ?'),
    settlementByToken: db.prepare('SELECT * FROM settlements WHERE token_id = ?'),
    settlementByReceipt: db.prepare('SELECT * FROM settlements WHERE receipt_id = ?'),
    releaseByToken: db.prepare('SELECT * FROM releases WHERE token_id = ?'),
    policyOf: db.prepare('SELECT * FROM policies WHERE agent_id = ?'),
    policies: db.prepare('SELECT * FROM policies ORDER BY agent_id'),
    committedUnits: db.prepare(WINDOW_SUMS.rollingCommitted),
    // What `spending` reports: the same rolling window and the same statuses as the daily cap.
    windowUnits: db.prepare(WINDOW_SUMS.rollingAgent),
    // Never moves back: of two readers at once, the later time stays.
    clientSeen: db.prepare('UPDATE authorizations SET client_seen_at = @at WHERE token_id = @token_id AND (client_seen_at IS NULL OR client_seen_at < @at)'),
    expire: db.prepare("UPDATE authorizations SET status = 'expired', closed_at = ? WHERE token_id = ?"),
    expiredUnclosed: db.prepare("SELECT * FROM authorizations WHERE status IN ('requested', 'approved') AND expires_at <= @now"),
    anyExpiredUnclosed: db.prepare("SELECT 1 FROM authorizations WHERE status IN ('requested', 'approved') AND expires_at <= ? LIMIT 1"),
    owner: db.prepare('SELECT account_id FROM owner'),
    insertOwner: db.prepare('INSERT INTO owner (account_id, created_at) VALUES (?, ?)'),
    closeOpenRecord: db.prepare(
      "UPDATE reconciliation_records SET status = 'resolved', resolution = ?, resolved_by = 'executor', resolved_at = ? WHERE token_id = ? AND status = 'open' RETURNING record_id",
    ),
    insertSettlement: db.prepare(
      `INSERT INTO settlements (settlement_id, token_id, receipt_id, execution_id, receipt_shape, amount_units, units_scale, currency,
         amount_cents, provider_request_id, price_model_snapshot, receipt_fingerprint, created_at)
       VALUES (?, ?, ?, ?, ?, ?, 6, ?, ?, ?, ?, ?, ?)`,
    ),
    markSettled: db.prepare("UPDATE authorizations SET status = 'settled', closed_at = ? WHERE token_id = ?"),
    insertRelease: db.prepare('INSERT INTO releases (release_id, token_id, execution_id, reason, created_at) VALUES (?, ?, ?, ?, ?)'),
    markReleased: db.prepare("UPDATE authorizations SET status = 'released', closed_at = ? WHERE token_id = ?"),
    insertAuthorization: db.prepare(
      `INSERT INTO authorizations (token_id, account_id, agent_id, amount_units, units_scale, currency, amount_cents, status, purpose,
         decided_by, decided_at, created_at, expires_at,
         policy_version, policy_per_authorization_cap_units, policy_daily_cap_units, policy_approval_threshold_units,
         idempotency_key, request_fingerprint, target_id, prompt)
       VALUES (?, ?, ?, ?, 6, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    ),
    // By the partial UNIQUE index (migration 7): at most one row.
    openByIdempotencyKey: db.prepare(
      "SELECT * FROM authorizations WHERE agent_id = ? AND idempotency_key = ? AND status IN ('requested', 'approved') AND idempotency_key IS NOT NULL",
    ),
    decide: db.prepare('UPDATE authorizations SET status = ?, decided_by = ?, decided_by_name = ?, decision_reason = ?, decided_at = ?, closed_at = ? WHERE token_id = ?'),
    pendingApprovals: db.prepare("SELECT * FROM authorizations WHERE status = 'requested' ORDER BY created_at"),
    list: db.prepare(
      `SELECT * FROM authorizations WHERE (@agent_id IS NULL OR agent_id = @agent_id) AND (@status IS NULL OR status = @status)
       ORDER BY created_at DESC LIMIT @limit`,
    ),
    claim: db.prepare("UPDATE authorizations SET status = 'claimed', execution_id = ?, claimed_at = ?, claimed_by = ? WHERE token_id = ?"),
    sameCredentialLine: db.prepare('SELECT 1 FROM credentials a JOIN credentials b ON a.lineage = b.lineage WHERE a.credential_id = ? AND b.credential_id = ?'),
    openRecordOf: db.prepare("SELECT record_id FROM reconciliation_records WHERE token_id = ? AND status = 'open'"),
    insertRecord: db.prepare(
      "INSERT INTO reconciliation_records (record_id, token_id, execution_id, reason, evidence, status, created_at) VALUES (?, ?, ?, ?, ?, 'open', ?)",
    ),
    recordIds: db.prepare('SELECT record_id FROM reconciliation_records WHERE (@status IS NULL OR status = @status) ORDER BY created_at'),
    recordById: db.prepare('SELECT * FROM reconciliation_records WHERE record_id = ?'),
    resolveRecord: db.prepare(
      "UPDATE reconciliation_records SET status = 'resolved', resolution = ?, resolved_by = ?, resolution_note = ?, resolved_at = ? WHERE record_id = ?",
    ),
  };

  return {
    /** Runs `fn` in one IMMEDIATE transaction: what it reads, checks and writes commits together. */
    immediate: immediateTransaction(db),
    /** Runs `fn`, which only reads, on one snapshot without the write lock (the metrics' budget standings). */
    snapshot: readTransaction(db),

    authorization: (tokenId: string) => statements.authorizationById.get(tokenId) as AuthorizationRow | undefined,
    expire(tokenId: string, at: number): void {
      statements.expire.run(at, tokenId);
    },
    /**
     * Every unclaimed authorization whose expiry `now` has reached becomes `expired`; answers
     * them as they were (so each expiry's event can say what expired). Inside a transaction.
     */
    sweepExpired(now: number): AuthorizationRow[] {
      const expiring = statements.expiredUnclosed.all({ now }) as AuthorizationRow[];
      for (const row of expiring) statements.expire.run(now, row.token_id);
      return expiring;
    },
    /** Whether some unclaimed authorization's expiry `now` has reached (a read: the periodic sweep takes the write lock only then). */
    anyToExpire: (now: number) => statements.anyExpiredUnclosed.get(now) !== undefined,

    ownerAccountId: () => (statements.owner.get() as { account_id: string } | undefined)?.account_id,
    insertOwner(accountId: string, at: number): void {
      statements.insertOwner.run(accountId, at);
    },

    /** The agent's own policy row (with its `version`), if it has one. */
    policy(agentId: string): (SpendPolicy & { version: bigint }) | undefined {
      const row = statements.policyOf.get(agentId) as StoredPolicyRow | undefined;
      return row === undefined ? undefined : policyOf(row);
    },
    /** Every agent's policy, by agent id. */
    policies: () => (statements.policies.all() as StoredPolicyRow[]).map(policyOf),
    /** What counts against the daily cap in the window: live holds, claims and settled amounts. */
    committedUnits: (window: AgentWindow) =>
      (statements.committedUnits.get({ agent_id: window.agentId, now: window.now, since: window.since }) as { units: bigint }).units,
    /** Settled amounts and live holds in the window. */
    windowUnits: (window: AgentWindow) =>
      statements.windowUnits.get({ agent_id: window.agentId, now: window.now, since: window.since }) as { spent: bigint; held: bigint },

    insertAuthorization(row: NewAuthorization): void {
      statements.insertAuthorization.run(
        row.tokenId,
        row.accountId,
        row.agentId,
        row.amountUnits,
        row.currency,
        row.amountCents,
        row.status,
        row.purpose,
        row.decidedBy,
        row.decidedAt,
        row.createdAt,
        row.expiresAt,
        row.policyVersion,
        row.policy.per_authorization_cap_units,
        row.policy.daily_cap_units,
        row.policy.approval_threshold_units,
        row.idempotency?.key ?? null,
        row.idempotency?.fingerprint ?? null,
        row.targetId,
        row.prompt,
      );
    },
    /** The agent's authorization this key opened while it is still stored as open (requested or approved; its expiry not checked). */
    openByIdempotencyKey: (agentId: string, key: string) => statements.openByIdempotencyKey.get(agentId, key) as AuthorizationRow | undefined,
    decide(tokenId: string, decision: Decision): void {
      statements.decide.run(decision.status, decision.decidedBy, decision.decidedByName, decision.reason, decision.decidedAt, decision.closedAt, tokenId);
    },
    pendingApprovals: () => statements.pendingApprovals.all() as AuthorizationRow[],
    list: (filter: { agentId: string | null; status: AuthorizationStatus | null; limit: number }) =>
      statements.list.all({ agent_id: filter.agentId, status: filter.status, limit: filter.limit }) as AuthorizationRow[],
    claim(tokenId: string, executionId: string, at: number, credentialId: string): void {
      statements.claim.run(executionId, at, credentialId, tokenId);
    },
    /** Whether two credentials are of one line (one of them rotated from the other, directly or not; ledger migration 7). */
    sameCredentialLine: (a: string, b: string) => statements.sameCredentialLine.get(a, b) !== undefined,

    settlementByReceipt: (receiptId: string) => statements.settlementByReceipt.get(receiptId) as SettlementRow | undefined,
    insertSettlement(settlement: NewSettlement): void {
      statements.insertSettlement.run(
        settlement.settlementId,
        settlement.tokenId,
        settlement.receiptId,
        settlement.executionId,
        settlement.receiptShape,
        settlement.amountUnits,
        settlement.currency,
        settlement.amountCents,
        settlement.providerRequestId,
        settlement.priceModelSnapshot,
        settlement.receiptFingerprint,
        settlement.at,
      );
    },
    markSettled(tokenId: string, at: number): void {
      statements.markSettled.run(at, tokenId);
    },
    insertRelease(release: { releaseId: string; tokenId: string; executionId: string; reason: string; at: number }): void {
      statements.insertRelease.run(release.releaseId, release.tokenId, release.executionId, release.reason, release.at);
    },
    markReleased(tokenId: string, at: number): void {
      statements.markReleased.run(at, tokenId);
    },

    /**
     * An authorization that becomes final closes its open reconciliation record, so ledger and
     * executor agree: resolved by the executor unless the reconciliation route records its own.
     * Answers the record closed, if one was open.
     */
    closeOpenRecord(tokenId: string, resolution: 'settled' | 'released', at: number): string | undefined {
      return (statements.closeOpenRecord.get(resolution, at, tokenId) as { record_id: string } | undefined)?.record_id;
    },
    openRecordId: (tokenId: string) => (statements.openRecordOf.get(tokenId) as { record_id: string } | undefined)?.record_id,
    insertRecord(record: { recordId: string; tokenId: string; executionId: string; reason: string; evidence: string; at: number }): void {
      statements.insertRecord.run(record.recordId, record.tokenId, record.executionId, record.reason, record.evidence, record.at);
    },
    recordIds: (status: 'open' | 'resolved' | null) => (statements.recordIds.all({ status }) as { record_id: string }[]).map((row) => row.record_id),
    record: (recordId: string) => statements.recordById.get(recordId) as ReconciliationRecordRow | undefined,
    resolveRecord(recordId: string, resolution: { resolution: string; resolvedBy: string; note: string | null; at: number }): void {
      statements.resolveRecord.run(resolution.resolution, resolution.resolvedBy, resolution.note, resolution.at, recordId);
    },

    /** Records that the agent asked after its authorization at `at` (ms): a client is still waiting on it. */
    clientSeen(tokenId: string, at: number): void {
      statements.clientSeen.run({ token_id: tokenId, at });
    },

    /** The authorization's view, with its settlement or release read now. */
    authorizationView(row: AuthorizationRow): LedgerAuthorization {
      const settlement = statements.settlementByToken.get(row.token_id) as SettlementRow | undefined;
      const release = statements.releaseByToken.get(row.token_id) as ReleaseRow | undefined;
      return authorizationView(row, settlement, release);
    },
    /** The view of a record known to exist. */
    recordView: (recordId: string): ReconciliationRecordView => recordView(statements.recordById.get(recordId) as ReconciliationRecordRow),
  };
}
