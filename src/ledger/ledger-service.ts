import type Database from 'better-sqlite3';
import type { SpendPolicy } from './authorization-rules.js';
import type { LedgerContractLevel } from './ledger-config.js';
import { NO_CRASH_POINTS, type CrashPoints } from '../crash-points.js';
import { createCalendar } from '../domain/calendar-period.js';
import type { InstallationBudget } from './budget-rules.js';
import { createAuditStore, type CredentialActor } from './store/audit-store.js';
import { createBudgetStore } from './store/budget-store.js';
import { createEventWaiters } from './events/event-waiters.js';
import { createEventStore, type LedgerEventQuery } from './store/event-store.js';
import type { LedgerEventPage } from './wire/answers.js';
import { sweepExpiries } from './use-cases/current-authorization.js';
import { createLedgerStore } from './store/ledger-store.js';
import { createReportStore } from './store/report-store.js';
import { createSuspensionStore } from './store/suspension-store.js';
import { createVelocityStore } from './store/velocity-store.js';
import { createRefusalStore } from './store/refusal-store.js';
import { agentSpending } from './use-cases/agent-spending.js';
import { auditTrail } from './use-cases/audit-trail.js';
import { allBudgetStandings } from './use-cases/budget-standing.js';
import { setInstallationBudget, showInstallationBudget } from './use-cases/installation-budget.js';
import { claimAuthorization } from './use-cases/claim-authorization.js';
import { decideAuthorization } from './use-cases/decide-authorization.js';
import { listAuthorizations, pendingApprovals } from './use-cases/list-authorizations.js';
import { openReconciliation } from './use-cases/open-reconciliation.js';
import { ownerAccountId } from './use-cases/owner-account.js';
import { releaseAuthorization } from './use-cases/release-authorization.js';
import { requestAuthorization } from './use-cases/request-authorization.js';
import { reconciliationRecords, resolveReconciliation } from './use-cases/resolve-reconciliation.js';
import { settleAuthorization } from './use-cases/settle-authorization.js';
import { spendReport } from './use-cases/spend-report.js';
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
  /** The installation's IANA time zone: calendar budgets' periods begin at its midnight, spend reports read dates in it (default UTC). */
  readonly timeZone?: string;
  /** Development builds' crash points after a commit (src/crash-points.ts). */
  readonly crashPoints?: CrashPoints;
  /** How often a long-poll of `GET /events` reads the latest event id, for events another process writes (ms; default 1000). */
  readonly eventPollMs?: number;
  /** Called when an event is appended, inside its transaction: whoever listens acts on a later turn, after the commit (the webhook worker's wake). */
  readonly onEventAppended?: () => void;
}

export type LedgerService = ReturnType<typeof createLedgerService>;

export function createLedgerService(options: LedgerServiceOptions) {
  const store = createLedgerStore(options.db);
  // Each needs the other: the store signals the waiters, which read the store's latest id.
  const waiters = createEventWaiters({ lastId: () => events.lastId(), pollMs: options.eventPollMs ?? 1000 });
  const events = createEventStore(options.db, {
    onAppend: () => {
      waiters.appended();
      options.onEventAppended?.();
    },
  });
  const context = {
    store,
    suspensions: createSuspensionStore(options.db),
    velocity: createVelocityStore(options.db),
    refusals: createRefusalStore(options.db),
    audit: createAuditStore(options.db),
    events,
    budgets: createBudgetStore(options.db),
    calendar: createCalendar(options.timeZone ?? 'UTC'),
    now: options.now,
    crash: options.crashPoints ?? NO_CRASH_POINTS,
    contractLevel: options.contractLevel,
    authorizationTtlMs: options.authorizationTtlMs,
    defaultPolicy: options.defaultPolicy,
    reports: createReportStore(options.db),
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
    spendReport: spendReport.bind(null, context),
    /** The installation-wide budget and its standing (docs/ledger.md "Budgets"). */
    installationBudget: () => showInstallationBudget(context),
    setInstallationBudget: (budget: InstallationBudget, actor: CredentialActor, expectedVersion: bigint | null) => setInstallationBudget(context, budget, actor, expectedVersion),
    /**
     * Every budget's standing now — each agent's calendar budgets and target caps, and the
     * installation's (agent_id null) — with what remains: for the metrics' budget gauges.
     */
    budgetStandings: () => allBudgetStandings(context),
    /** One page of ledger events after a cursor (docs/ledger.md "Events"). */
    events: (query: LedgerEventQuery) => context.events.page(query),
    /** The latest event's id (0 when none). */
    lastEventId: () => context.events.lastId(),
    /**
     * `GET /events?wait_seconds=`: the page after the cursor as soon as it holds an event, or the
     * empty page once `waitMs` have passed, `signal` aborts (the client left) or the ledger stops.
     */
    async waitEvents(query: LedgerEventQuery, waitMs: number, signal?: AbortSignal): Promise<LedgerEventPage> {
      const deadline = performance.now() + waitMs;
      for (;;) {
        // The latest id first: an event appended between the two reads is in the page or wakes the wait.
        const seen = events.lastId();
        const page = events.page(query);
        const left = deadline - performance.now();
        if (page.events.length > 0 || left <= 0 || waiters.closed() || signal?.aborted === true) return page;
        await waiters.waitAfter(seen, left, signal);
      }
    },
    /** Answers every waiting `GET /events` now (the ledger stops). */
    closeEvents: () => {
      waiters.close();
    },
    /** Persists the expiries the clock has reached, with their events (the ledger's periodic sweep); answers how many. */
    sweepExpiries: () => sweepExpiries(context),
  };
}
