import type { LedgerAuthorization, LedgerResolution, LedgerSpending } from './wire/answers.js';
import { randomUUID } from 'node:crypto';
import type Database from 'better-sqlite3';
import { canonicalJson, fingerprint } from '../domain/canonical-json.js';
import { UNITS_SCALE } from '../domain/money.js';
import { redactSecretShapes } from '../domain/secret-text.js';
import { conflict, notFound, unprocessable } from './ledger-error.js';
import {
  centsCeil,
  decideRequest,
  effectiveStatus,
  ROLLING_WINDOW_MS,
  unitsFromCents,
  type AuthorizationStatus,
  type SpendPolicy,
} from './authorization-rules.js';
import type { ClaimRequirement, LegacyCentsReceipt, PreciseReceipt } from './wire/requests.js';
import type { LedgerContractLevel } from './ledger-config.js';
import { NO_CRASH_POINTS, type CrashPoints } from '../crash-points.js';

/*
 * The ledger's use cases. Each money-moving operation runs in one IMMEDIATE transaction that
 * reads, checks and writes — never check-then-spend — so concurrent requests (even from other
 * processes on the same file) cannot pass a cap or settle and release the same authorization.
 */

export interface AuthorizationRow {
  token_id: string;
  account_id: string;
  agent_id: string;
  amount_units: bigint;
  units_scale: bigint;
  currency: string;
  amount_cents: bigint;
  status: AuthorizationStatus;
  purpose: string | null;
  decided_by: string | null;
  decision_reason: string | null;
  execution_id: string | null;
  created_at: bigint;
  decided_at: bigint | null;
  claimed_at: bigint | null;
  closed_at: bigint | null;
  expires_at: bigint;
  /** The policy the request was decided under (migration 3; null for older rows). */
  policy_version: bigint | null;
  policy_per_authorization_cap_units: bigint | null;
  policy_daily_cap_units: bigint | null;
  policy_approval_threshold_units: bigint | null;
  /** The executor credential that claimed it (migration 4; null before, unless attributable). */
  claimed_by: string | null;
}

interface SettlementRow {
  settlement_id: string;
  token_id: string;
  receipt_id: string;
  execution_id: string;
  receipt_shape: 'precise' | 'legacy_cents';
  amount_units: bigint;
  amount_cents: bigint;
  currency: string;
  provider_request_id: string | null;
  receipt_fingerprint: string;
  created_at: bigint;
}

/** A receipt after validation: precise, or legacy whole cents converted exactly to micro-units. */
export type Receipt = { readonly shape: 'precise'; readonly body: PreciseReceipt } | { readonly shape: 'legacy_cents'; readonly body: LegacyCentsReceipt };

export interface LedgerServiceOptions {
  readonly db: Database.Database;
  readonly now: () => number;
  readonly contractLevel: LedgerContractLevel;
  readonly authorizationTtlMs: number;
  readonly defaultPolicy: SpendPolicy;
  /** Development builds' crash points after a commit (src/crash-points.ts). */
  readonly crashPoints?: CrashPoints;
}

function iso(ms: bigint): string;
function iso(ms: bigint | null): string | null;
function iso(ms: bigint | null): string | null {
  return ms === null ? null : new Date(Number(ms)).toISOString();
}

export type LedgerService = ReturnType<typeof createLedgerService>;

export function createLedgerService(options: LedgerServiceOptions) {
  const { db, now } = options;
  const crash = options.crashPoints ?? NO_CRASH_POINTS;

  // Every statement is prepared once: preparing costs about 10 µs a time, on every request.
  const authorizationById = db.prepare('SELECT * FROM authorizations WHERE token_id = ?');
  const settlementByToken = db.prepare('SELECT * FROM settlements WHERE token_id = ?');
  const settlementByReceipt = db.prepare('SELECT * FROM settlements WHERE receipt_id = ?');
  const releaseByToken = db.prepare('SELECT * FROM releases WHERE token_id = ?');
  const policyOf = db.prepare('SELECT * FROM policies WHERE agent_id = ?');
  const committedUnits = db.prepare(`
    SELECT COALESCE(SUM(CASE
      WHEN a.status IN ('requested', 'approved') AND a.expires_at > @now THEN a.amount_units
      WHEN a.status = 'claimed' THEN a.amount_units
      WHEN a.status = 'settled' THEN s.amount_units
      ELSE 0 END), 0) AS units
    FROM authorizations a LEFT JOIN settlements s ON s.token_id = a.token_id
    WHERE a.agent_id = @agent_id AND a.created_at > @since`);
  // What `spending` reports: the same rolling window and the same statuses as the daily cap.
  const windowUnits = db.prepare(`
    SELECT
      COALESCE(SUM(CASE WHEN a.status = 'settled' THEN s.amount_units ELSE 0 END), 0) AS spent,
      COALESCE(SUM(CASE
        WHEN a.status IN ('requested', 'approved') AND a.expires_at > @now THEN a.amount_units
        WHEN a.status = 'claimed' THEN a.amount_units
        ELSE 0 END), 0) AS held
    FROM authorizations a LEFT JOIN settlements s ON s.token_id = a.token_id
    WHERE a.agent_id = @agent_id AND a.created_at > @since`);
  const statements = {
    expire: db.prepare("UPDATE authorizations SET status = 'expired', closed_at = ? WHERE token_id = ?"),
    sweepExpired: db.prepare("UPDATE authorizations SET status = 'expired', closed_at = @now WHERE status IN ('requested', 'approved') AND expires_at <= @now"),
    owner: db.prepare('SELECT account_id FROM owner'),
    insertOwner: db.prepare('INSERT INTO owner (account_id, created_at) VALUES (?, ?)'),
    closeOpenRecord: db.prepare(
      "UPDATE reconciliation_records SET status = 'resolved', resolution = ?, resolved_by = 'executor', resolved_at = ? WHERE token_id = ? AND status = 'open'",
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
         policy_version, policy_per_authorization_cap_units, policy_daily_cap_units, policy_approval_threshold_units)
       VALUES (?, ?, ?, ?, 6, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    ),
    decide: db.prepare('UPDATE authorizations SET status = ?, decided_by = ?, decision_reason = ?, decided_at = ?, closed_at = ? WHERE token_id = ?'),
    pendingApprovals: db.prepare("SELECT * FROM authorizations WHERE status = 'requested' ORDER BY created_at"),
    list: db.prepare(
      `SELECT * FROM authorizations WHERE (@agent_id IS NULL OR agent_id = @agent_id) AND (@status IS NULL OR status = @status)
       ORDER BY created_at DESC LIMIT @limit`,
    ),
    claim: db.prepare("UPDATE authorizations SET status = 'claimed', execution_id = ?, claimed_at = ?, claimed_by = ? WHERE token_id = ?"),
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

  function load(tokenId: string): AuthorizationRow {
    const row = authorizationById.get(tokenId) as AuthorizationRow | undefined;
    if (!row) throw notFound();
    return row;
  }

  /** Persists an expiry that the clock has reached, so every reader agrees on the status. */
  function current(tokenId: string): AuthorizationRow {
    const row = load(tokenId);
    const status = effectiveStatus(row.status, Number(row.expires_at), now());
    if (status === row.status) return row;
    statements.expire.run(now(), tokenId);
    return load(tokenId);
  }

  /** Persists every expiry the clock has reached, so listings can filter by status in SQL. */
  function sweepExpired(): void {
    statements.sweepExpired.run({ now: now() });
  }

  function ownerAccountId(): string {
    const row = statements.owner.get() as { account_id: string } | undefined;
    if (row) return row.account_id;
    const accountId = `acct_${randomUUID()}`;
    statements.insertOwner.run(accountId, now());
    return accountId;
  }

  function view(row: AuthorizationRow): LedgerAuthorization {
    const settlement = settlementByToken.get(row.token_id) as SettlementRow | undefined;
    const release = releaseByToken.get(row.token_id) as { reason: string; created_at: bigint } | undefined;
    return {
      token_id: row.token_id,
      account_id: row.account_id,
      agent_id: row.agent_id,
      status: row.status,
      amount_units: row.amount_units,
      units_scale: UNITS_SCALE,
      currency: row.currency,
      amount_cents: row.amount_cents,
      // Text stored before secret-shaped text was refused is shown without the secret.
      purpose: row.purpose === null ? null : redactSecretShapes(row.purpose),
      execution_id: row.execution_id,
      decided_by: row.decided_by,
      decision_reason: row.decision_reason === null ? null : redactSecretShapes(row.decision_reason),
      policy:
        row.policy_approval_threshold_units === null || row.policy_per_authorization_cap_units === null || row.policy_daily_cap_units === null
          ? null
          : {
              version: row.policy_version,
              per_authorization_cap_units: row.policy_per_authorization_cap_units,
              daily_cap_units: row.policy_daily_cap_units,
              approval_threshold_units: row.policy_approval_threshold_units,
            },
      created_at: iso(row.created_at),
      decided_at: iso(row.decided_at),
      expires_at: iso(row.expires_at),
      settlement: settlement
        ? {
            settlement_id: settlement.settlement_id,
            receipt_id: settlement.receipt_id,
            receipt_shape: settlement.receipt_shape,
            amount_units: settlement.amount_units,
            amount_cents: settlement.amount_cents,
            settled_at: iso(settlement.created_at),
          }
        : null,
      release: release ? { reason: release.reason, released_at: iso(release.created_at) } : null,
    };
  }

  /** What the executor sees: authoritative account, agent, held amount, status and expiry. */
  function resolution(row: AuthorizationRow): LedgerResolution {
    return {
      token_id: row.token_id,
      account_id: row.account_id,
      agent_id: row.agent_id,
      status: row.status,
      held_units: row.amount_units,
      units_scale: UNITS_SCALE,
      currency: row.currency,
      expires_at: iso(row.expires_at),
      execution_id: row.execution_id,
    };
  }

  function policyFor(agentId: string): SpendPolicy {
    const row = policyOf.get(agentId) as SpendPolicy | undefined;
    return row ?? options.defaultPolicy;
  }

  function requireClaimedBy(row: AuthorizationRow, executionId: string): void {
    if (row.status === 'claimed' && row.execution_id === executionId) return;
    if (row.execution_id !== null && row.execution_id !== executionId) throw conflict('claimed_by_another_execution');
    throw conflict(`authorization_${row.status}`);
  }

  function normaliseReceipt(receipt: Receipt) {
    if (receipt.shape === 'precise') {
      const body = receipt.body;
      return {
        receipt_id: body.receipt_id,
        amount_units: body.amount_units,
        currency: body.currency,
        provider_request_id: body.provider_request_id,
        price_model_snapshot: canonicalJson(body.price_model_snapshot),
      };
    }
    const body = receipt.body;
    return {
      receipt_id: body.receipt_id,
      amount_units: unitsFromCents(body.amount_cents),
      currency: body.currency,
      provider_request_id: null,
      price_model_snapshot: canonicalJson(body.price_model_snapshot),
    };
  }

  /**
   * An authorization that becomes final closes its open reconciliation record, so ledger and
   * executor agree: resolved by the executor unless the reconciliation route records its own.
   */
  function closeOpenRecord(tokenId: string, resolution: 'settled' | 'released', at: number): void {
    statements.closeOpenRecord.run(resolution, at, tokenId);
  }

  /** Settles inside an open transaction; shared by the executor route and reconciliation. */
  function settleWithin(tokenId: string, executionId: string, receipt: Receipt) {
    if (receipt.shape === 'precise' && options.contractLevel === 'v4.4') {
      throw unprocessable('precise_receipt_unsupported', 'contract_level_v4.4', ['receipt.amount_units']);
    }
    const normal = normaliseReceipt(receipt);
    const receiptFingerprint = fingerprint({ token_id: tokenId, execution_id: executionId, shape: receipt.shape, receipt: receipt.body });
    const existing = settlementByReceipt.get(normal.receipt_id) as SettlementRow | undefined;
    if (existing) {
      if (existing.token_id === tokenId && existing.receipt_fingerprint === receiptFingerprint) return { replayed: true, row: current(tokenId) };
      throw conflict('receipt_conflict', ['receipt.receipt_id']);
    }
    const row = current(tokenId);
    if (row.status === 'settled') throw conflict('authorization_settled');
    requireClaimedBy(row, executionId);
    if (normal.currency !== row.currency) throw unprocessable('currency_mismatch', undefined, ['receipt.currency']);
    if (normal.amount_units > row.amount_units) {
      throw unprocessable('amount_exceeds_hold', undefined, [receipt.shape === 'precise' ? 'receipt.amount_units' : 'receipt.amount_cents']);
    }
    const at = now();
    statements.insertSettlement.run(
      `stl_${randomUUID()}`,
      tokenId,
      normal.receipt_id,
      executionId,
      receipt.shape,
      normal.amount_units,
      normal.currency,
      centsCeil(normal.amount_units),
      normal.provider_request_id,
      normal.price_model_snapshot,
      receiptFingerprint,
      at,
    );
    statements.markSettled.run(at, tokenId);
    closeOpenRecord(tokenId, 'settled', at);
    return { replayed: false, row: load(tokenId) };
  }

  function releaseWithin(tokenId: string, executionId: string, reason: string, credentialId: string | null = null) {
    const row = current(tokenId);
    if (row.status === 'released') return { replayed: true, row };
    if (row.status === 'settled') throw conflict('authorization_settled');
    requireClaimedBy(row, executionId);
    // An orphan claim is released only by the executor that claimed it: only that executor can
    // know it never created the execution. An unattributed claim is left to a human.
    if (reason === 'claim_without_execution' && (row.claimed_by === null || row.claimed_by !== credentialId)) throw conflict('claimed_by_another_credential');
    const at = now();
    statements.insertRelease.run(`rel_${randomUUID()}`, tokenId, executionId, reason, at);
    statements.markReleased.run(at, tokenId);
    closeOpenRecord(tokenId, 'released', at);
    return { replayed: false, row: load(tokenId) };
  }

  // One transaction function for every use case (building one per call costs about 6 µs).
  const transaction = db.transaction((fn: () => unknown) => fn());
  const immediate = <T>(fn: () => T): T => transaction.immediate(fn) as T;

  return {
    ownerAccountId: () => immediate(ownerAccountId),

    /** An agent asks for a spend authorization; caps are checked and the hold taken atomically. */
    requestAuthorization(agentId: string, input: { amount_units: bigint; currency: string; purpose?: string | undefined }) {
      return immediate(() => {
        const at = now();
        const committed = (committedUnits.get({ agent_id: agentId, now: at, since: at - ROLLING_WINDOW_MS }) as { units: bigint }).units;
        const policy = policyFor(agentId);
        const decision = decideRequest(policy, input.amount_units, committed);
        if (decision.outcome === 'refused') throw unprocessable('policy_refused', decision.reason, ['amount_units']);
        const tokenId = randomUUID();
        statements.insertAuthorization.run(
          tokenId,
          ownerAccountId(),
          agentId,
          input.amount_units,
          input.currency,
          centsCeil(input.amount_units),
          decision.outcome,
          input.purpose ?? null,
          decision.outcome === 'approved' ? 'policy' : null,
          decision.outcome === 'approved' ? at : null,
          at,
          at + options.authorizationTtlMs,
          'version' in policy ? policy.version : null,
          policy.per_authorization_cap_units,
          policy.daily_cap_units,
          policy.approval_threshold_units,
        );
        return view(load(tokenId));
      });
    },

    /** An approver decides a pending request. Deciding the same way twice is a no-op. */
    decide(tokenId: string, decision: 'approved' | 'denied', credentialId: string, reason?: string) {
      return immediate(() => {
        const row = current(tokenId);
        if (row.status === decision) return view(row);
        if (row.status !== 'requested') throw conflict(`authorization_${row.status}`);
        statements.decide.run(
          decision,
          credentialId,
          reason ?? null,
          now(),
          decision === 'denied' ? now() : null,
          tokenId,
        );
        return view(load(tokenId));
      });
    },

    pendingApprovals() {
      return immediate(() => {
        sweepExpired();
        const rows = statements.pendingApprovals.all() as AuthorizationRow[];
        return rows.map(view);
      });
    },

    show: (tokenId: string) => immediate(() => view(current(tokenId))),

    /**
     * An agent's own standing against its daily cap, read in one transaction: settled amounts
     * and live holds in the rolling window the cap uses (exactly what `requestAuthorization`
     * counts), and what is left. `remaining_units` never goes below zero.
     */
    spending(agentId: string, policy: SpendPolicy): Omit<LedgerSpending, 'policy'> {
      return immediate(() => {
        const at = now();
        const { spent, held } = windowUnits.get({ agent_id: agentId, now: at, since: at - ROLLING_WINDOW_MS }) as { spent: bigint; held: bigint };
        const left = policy.daily_cap_units - spent - held;
        return {
          agent_id: agentId,
          window: 'rolling_24h' as const,
          spent_units: spent,
          held_units: held,
          remaining_units: left > 0n ? left : 0n,
          units_scale: UNITS_SCALE,
          currency: 'USD',
          as_of: new Date(at).toISOString(),
        };
      });
    },

    list(filter: { agent_id?: string | undefined; status?: AuthorizationStatus | undefined; limit: number }) {
      return immediate(() => {
        sweepExpired();
        const rows = statements.list.all({ agent_id: filter.agent_id ?? null, status: filter.status ?? null, limit: filter.limit }) as AuthorizationRow[];
        return rows.map(view);
      });
    },

    /**
     * A read needs no write lock unless the clock has expired the authorization, which `current`
     * then persists: one SELECT is already a consistent snapshot of the row.
     */
    resolve(tokenId: string) {
      const row = load(tokenId);
      if (effectiveStatus(row.status, Number(row.expires_at), now()) === row.status) return resolution(row);
      return immediate(() => resolution(current(tokenId)));
    },

    /**
     * Claims an approved authorization for one execution; the same execution may repeat it. With
     * a requirement, an authorization that does not meet it (another currency, a smaller hold) is
     * refused with 422 and nothing is claimed. The claiming credential is recorded with the claim
     * (a repeat keeps the first): an executor lists its own claims by it (executor-claims.ts).
     */
    claim(tokenId: string, executionId: string, requirement: ClaimRequirement | undefined, credentialId: string) {
      const claimed = immediate(() => {
        const row = current(tokenId);
        if (row.execution_id !== null && row.execution_id !== executionId) throw conflict('claimed_by_another_execution');
        if (row.execution_id === null && row.status !== 'approved') throw conflict(`authorization_${row.status}`);
        if (requirement !== undefined) {
          if (row.currency !== requirement.currency) throw unprocessable('requirement_not_met', 'currency_mismatch', ['require.currency']);
          if (row.amount_units < requirement.min_held_units) throw unprocessable('requirement_not_met', 'hold_below_requirement', ['require.min_held_units']);
        }
        if (row.execution_id === executionId) {
          // Execution ids come from the token: another executor on this ledger given the same
          // token would name the same execution. Only its claimant may repeat a claim, or two
          // executors would each submit it (docs/ledger.md).
          if (row.claimed_by !== null && row.claimed_by !== credentialId) throw conflict('claimed_by_another_credential');
          return { replayed: true, authorization: resolution(row) };
        }
        statements.claim.run(executionId, now(), credentialId, tokenId);
        return { replayed: false, authorization: resolution(load(tokenId)) };
      });
      crash.reach('ledger.after_claim_commit');
      return claimed;
    },

    settle(tokenId: string, executionId: string, receipt: Receipt) {
      const settled = immediate(() => {
        const { replayed, row } = settleWithin(tokenId, executionId, receipt);
        return { replayed, authorization: view(row) };
      });
      crash.reach('ledger.after_settle_commit');
      return settled;
    },

    /** `credentialId`: the releasing executor credential (a `claim_without_execution` release must be the claimant). */
    release(tokenId: string, executionId: string, reason: string, credentialId: string) {
      const released = immediate(() => {
        const { replayed, row } = releaseWithin(tokenId, executionId, reason, credentialId);
        return { replayed, authorization: view(row) };
      });
      crash.reach('ledger.after_release_commit');
      return released;
    },

    /** The executor parks a claimed authorization whose billing is ambiguous; the hold stays. */
    openReconciliation(tokenId: string, executionId: string, reason: string, evidence: Record<string, unknown>) {
      const opened = immediate(() => {
        const row = current(tokenId);
        requireClaimedBy(row, executionId);
        const open = statements.openRecordOf.get(tokenId) as
          | { record_id: string }
          | undefined;
        const recordId = open?.record_id ?? `rec_${randomUUID()}`;
        if (!open) {
          statements.insertRecord.run(recordId, tokenId, executionId, reason, canonicalJson(evidence), now());
        }
        return { replayed: open !== undefined, record: recordView(recordId) };
      });
      crash.reach('ledger.after_reconciliation_commit');
      return opened;
    },

    reconciliationRecords(status: 'open' | 'resolved' | undefined) {
      const rows = statements.recordIds.all({ status: status ?? null }) as { record_id: string }[];
      return rows.map((row) => recordView(row.record_id));
    },

    /** Resolves a record by settling or releasing its authorization, in the same transaction. */
    resolveReconciliation(
      recordId: string,
      credentialId: string,
      resolution: { kind: 'settle'; receipt: Receipt } | { kind: 'release'; reason: string },
    ) {
      const resolved = immediate(() => {
        const record = statements.recordById.get(recordId) as
          | { token_id: string; execution_id: string; status: string; resolution: string | null }
          | undefined;
        if (!record) throw notFound();
        const wanted = resolution.kind === 'settle' ? 'settled' : 'released';
        if (record.status === 'resolved') {
          if (record.resolution === wanted) return { replayed: true, record: recordView(recordId) };
          throw conflict('record_resolved');
        }
        if (resolution.kind === 'settle') settleWithin(record.token_id, record.execution_id, resolution.receipt);
        else releaseWithin(record.token_id, record.execution_id, 'reconciled_no_charge');
        statements.resolveRecord.run(wanted, credentialId, resolution.kind === 'release' ? resolution.reason : null, now(), recordId);
        return { replayed: false, record: recordView(recordId) };
      });
      crash.reach('ledger.after_resolve_commit');
      return resolved;
    },
  };

  function recordView(recordId: string) {
    const row = statements.recordById.get(recordId) as {
      record_id: string;
      token_id: string;
      execution_id: string;
      reason: string;
      evidence: string;
      status: string;
      resolution: string | null;
      resolved_by: string | null;
      resolution_note: string | null;
      resolved_at: bigint | null;
      created_at: bigint;
    };
    return {
      record_id: row.record_id,
      token_id: row.token_id,
      execution_id: row.execution_id,
      reason: row.reason,
      evidence: JSON.parse(row.evidence) as unknown,
      status: row.status,
      resolution: row.resolution,
      resolved_by: row.resolved_by,
      resolution_note: row.resolution_note === null ? null : redactSecretShapes(row.resolution_note),
      created_at: iso(row.created_at),
      resolved_at: iso(row.resolved_at),
    };
  }
}
