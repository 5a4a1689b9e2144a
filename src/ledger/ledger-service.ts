import type Database from 'better-sqlite3';
import type { SpendPolicy } from './authorization-rules.js';
import type { LedgerContractLevel } from './ledger-config.js';
import { NO_CRASH_POINTS, type CrashPoints } from '../crash-points.js';
import { createAuditStore } from './store/audit-store.js';
import { createEventStore, type LedgerEventQuery } from './store/event-store.js';
import { createLedgerStore } from './store/ledger-store.js';
import { createSuspensionStore } from './store/suspension-store.js';
import { createVelocityStore } from './store/velocity-store.js';
import { agentSpending } from './use-cases/agent-spending.js';
import { auditTrail } from './use-cases/audit-trail.js';
import { claimAuthorization } from './use-cases/claim-authorization.js';
import { decideAuthorization } from './use-cases/decide-authorization.js';
import { listAuthorizations, pendingApprovals } from './use-cases/list-authorizations.js';
import { openReconciliation } from './use-cases/open-reconciliation.js';
import { ownerAccountId } from './use-cases/owner-account.js';
import { releaseAuthorization } from './use-cases/release-authorization.js';
import { requestAuthorization } from './use-cases/request-authorization.js';
import { reconciliationRecords, resolveReconciliation } from './use-cases/resolve-reconciliation.js';
import { settleAuthorization } from './use-cases/settle-authorization.js';
import { noteClientSeen, resolveAuthorization, showAuthorization } from './use-cases/show-authorization.js';
import { resumeAgent, suspendAgent } from './use-cases/suspend-agent.js';

export type { AuthorizationRow } from './store/ledger-rows.js';
export type { Receipt } from './use-cases/settle-authorization.js';

/*
 * The ledger's use cases (src/ledger/use-cases/), over its store (src/ledger/store/). Each
 * money-moving operation runs in one IMMEDIATE transaction that reads, checks and writes — never
 * check-then-spend — so concurrent requests (even from other processes on the same file) cannot
 * pass a cap or settle and release the same authorization.
 */

export interface LedgerServiceOptions {
  readonly db: Database.Database;
  readonly now: () => number;
  readonly contractLevel: LedgerContractLevel;
  readonly authorizationTtlMs: number;
  readonly defaultPolicy: SpendPolicy;
  /** Development builds' crash points after a commit (src/crash-points.ts). */
  readonly crashPoints?: CrashPoints;
}

export type LedgerService = ReturnType<typeof createLedgerService>;

export function createLedgerService(options: LedgerServiceOptions) {
  const store = createLedgerStore(options.db);
  const context = {
    store,
    suspensions: createSuspensionStore(options.db),
    velocity: createVelocityStore(options.db),
    audit: createAuditStore(options.db),
    events: createEventStore(options.db),
    now: options.now,
    crash: options.crashPoints ?? NO_CRASH_POINTS,
    contractLevel: options.contractLevel,
    authorizationTtlMs: options.authorizationTtlMs,
    defaultPolicy: options.defaultPolicy,
  };

  return {
    ownerAccountId: () => store.immediate(() => ownerAccountId(context)),
    requestAuthorization: requestAuthorization.bind(null, context),
    decide: decideAuthorization.bind(null, context),
    pendingApprovals: () => pendingApprovals(context),
    show: showAuthorization.bind(null, context),
    noteClientSeen: noteClientSeen.bind(null, context),
    spending: agentSpending.bind(null, context),
    list: listAuthorizations.bind(null, context),
    resolve: resolveAuthorization.bind(null, context),
    claim: claimAuthorization.bind(null, context),
    settle: settleAuthorization.bind(null, context),
    release: releaseAuthorization.bind(null, context),
    openReconciliation: openReconciliation.bind(null, context),
    reconciliationRecords: reconciliationRecords.bind(null, context),
    resolveReconciliation: resolveReconciliation.bind(null, context),
    suspendAgent: suspendAgent.bind(null, context),
    resumeAgent: resumeAgent.bind(null, context),
    auditTrail: auditTrail.bind(null, context),
    /** One page of ledger events after a cursor (docs/ledger.md "Events"). */
    events: (query: LedgerEventQuery) => context.events.page(query),
    /** The latest event's id (0 when none). */
    lastEventId: () => context.events.lastId(),
  };
}
