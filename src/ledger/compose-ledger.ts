import { dirname } from 'node:path';
import type { Logger } from 'pino';
import { readBuildInfo, type BuildInfo } from '../build-info.js';
import { createCrashPoints } from '../crash-points.js';
import type { RejectionSummaryTiming } from '../http/rejection-summariser.js';
import { MIN_FREE_BYTES, watchDiskSpace } from '../storage/disk-space.js';
import { openDatabase } from '../storage/open-database.js';
import { tightenedEvent } from '../storage/private-state.js';
import { ensureAdminCapability, type AdminCapabilityOutcome } from './admin-capability.js';
import { createCredentialLifecycle, type CredentialLifecycle } from './credential-lifecycle.js';
import { createExecutorClaims } from './executor-claims.js';
import { buildLedgerApp } from './http/ledger-app.js';
import { createLedgerAdmin, type LedgerAdmin } from './ledger-admin.js';
import { createExecutorEnrolments } from './executor-enrolments.js';
import { registerEnrolmentRoutes } from './http/enrolment-routes.js';
import type { LedgerConfig } from './ledger-config.js';
import type { SpendPolicy } from './authorization-rules.js';
import { createLedgerService, type LedgerService } from './ledger-service.js';
import { LEDGER_MIGRATIONS } from './store/migrations.js';
import { createWebhookStore } from './store/webhook-store.js';
import { startDeliveryThread } from './webhooks/delivery-in-thread.js';
import { DEFAULT_WEBHOOK_DELIVERY, startWebhookDelivery, type WebhookDeliverySettings } from './webhooks/webhook-delivery.js';
import { createWebhookSinks, type WebhookSinks } from './webhooks/webhook-sinks.js';
import { createMetricsReads } from './store/metrics-reads.js';
import { createLedgerMetrics, type BudgetRemaining, type WebhookDeliveryCounts } from './ledger-metrics.js';
import type { BudgetStandingEntry } from './use-cases/budget-standing.js';

export interface ComposedLedger {
  readonly buildInfo: BuildInfo;
  readonly service: LedgerService;
  readonly admin: LedgerAdmin;
  readonly credentials: CredentialLifecycle;
  readonly app: ReturnType<typeof buildLedgerApp>;
  /** The webhook sinks; `deliveryCounts()` answers deliveries by sink and status (for the metrics). */
  readonly webhooks: WebhookSinks;
  /** Whether the admin capability file was created now or found. */
  readonly adminCapability: AdminCapabilityOutcome;
  /** How many agents follow `[ledger.default_policy]` and had it applied at this start. */
  readonly defaultPolicyAppliedTo: number;
  /** Claims with no recorded claimant (made before ledger migration 4 with several executor credentials): left to a human. */
  readonly unattributedClaims: number;
  /** Whether development crash points are armed in this process. */
  readonly crashPointsEnabled: boolean;
  /** Stops the webhook delivery (in-flight deliveries stay pending) and closes the database (after the app is closed). */
  close(): void;
}

export interface ComposeLedgerOptions {
  /** The parts of the configuration a ledger needs (the listen address is serve's business). */
  readonly config: Pick<LedgerConfig, 'database_path' | 'admin_capability_path' | 'contract_level' | 'authorization_ttl_seconds'> &
    Partial<Pick<LedgerConfig, 'time_zone'>> & {
      readonly default_policy: SpendPolicy;
      readonly webhook_delivery?: LedgerConfig['webhook_delivery'];
    };
  /** Where every part logs (serve: stderr; tests: a sink they read back). */
  readonly logger: Logger;
  /** The ledger's clock, ms since the epoch (serve: Date.now; tests: one they can move). */
  readonly now?: () => number;
  /** The process environment (serve: process.env), read only for development crash points. */
  readonly env?: NodeJS.ProcessEnv;
  /** How repeated rejections are collapsed in the log (serve: the system clock, 60 s; tests: a fake clock). */
  readonly rejectionSummary?: RejectionSummaryTiming;
  /** The certificate and key to serve HTTPS with (src/http/server-tls.ts); absent: plain HTTP. */
  readonly tls?: { readonly cert: string; readonly key: string };
  /**
   * Where webhooks are delivered: `thread` — a worker thread with its own connection and the
   * system clock (`ledger serve`: delivering never shares the requests' thread) — or `in-process`
   * (default; tests, whose clock `now` moves the retries).
   */
  readonly webhookDelivery?: 'thread' | 'in-process';
  /** How often expiries the clock has reached are persisted, with their events, when nobody reads them (ms; default 5000). */
  readonly expirySweepMs?: number;
  /** How often a long-poll of `GET /events` looks for events another process wrote (ms; default 1000). */
  readonly eventPollMs?: number;
}

/**
 * The ledger's periodic expiry sweep (docs/ledger.md "Events"). A failure (the database busy past
 * its timeout, the disk full) is logged once until a sweep succeeds again; the next sweep retries.
 */
function sweepExpiriesEvery(ms: number, sweep: () => number, logger: Logger): NodeJS.Timeout {
  let failing = false;
  const timer = setInterval(() => {
    try {
      sweep();
      if (failing) logger.info({ event: 'ledger_expiry_sweep_recovered' });
      failing = false;
    } catch (error) {
      if (!failing) logger.warn({ event: 'ledger_expiry_sweep_failed', reason: error instanceof Error ? error.message : String(error) });
      failing = true;
    }
  }, ms);
  timer.unref();
  return timer;
}

/** The calendar and installation budgets' standings as the metrics' gauges label them: by agent name, `installation` for the installation's. */
function budgetsRemaining(standings: readonly BudgetStandingEntry[], names: ReadonlyMap<string, string>): BudgetRemaining[] {
  return standings.map((standing) => ({
    agent: standing.agent_id === null ? 'installation' : (names.get(standing.agent_id) ?? standing.agent_id),
    budget: standing.name,
    period: standing.period,
    remaining: standing.remaining_units,
  }));
}

/** Every sink's deliveries, delivered and failed, summed. */
function deliveriesDone(counts: readonly { readonly delivered: number; readonly failed: number }[]): WebhookDeliveryCounts {
  return counts.reduce((sum, sink) => ({ delivered: sum.delivered + BigInt(sink.delivered), failed: sum.failed + BigInt(sink.failed) }), { delivered: 0n, failed: 0n });
}

/**
 * The ledger's one composition root (STYLE.md habit 12), for `ledger serve` and the tests alike:
 * opens and migrates its database, builds the admin and service use cases, makes sure the admin
 * capability exists, applies the configured default policy to every agent that follows it, and
 * builds the HTTP app. Nothing listens yet.
 */
export async function composeLedger(options: ComposeLedgerOptions): Promise<ComposedLedger> {
  const { config } = options;
  const now = options.now ?? (() => Date.now());
  const buildInfo = readBuildInfo();
  const crashPoints = createCrashPoints({ buildKind: buildInfo.build_kind, env: options.env ?? {} });
  const db = openDatabase(config.database_path, LEDGER_MIGRATIONS, {
    onTightened: (files) => {
      for (const file of files) options.logger.warn(tightenedEvent(file));
    },
  });
  try {
    const defaultPolicy = config.default_policy;
    // The webhook worker is made after the service; an event appended wakes it once there.
    let wakeDelivery = (): void => undefined;
    const admin = createLedgerAdmin({ db, now, defaultPolicy });
    const service = createLedgerService({
      db,
      now,
      contractLevel: config.contract_level,
      authorizationTtlMs: config.authorization_ttl_seconds * 1000,
      defaultPolicy,
      timeZone: config.time_zone ?? 'UTC',
      crashPoints,
      ...(options.eventPollMs === undefined ? {} : { eventPollMs: options.eventPollMs }),
      onEventAppended: () => {
        wakeDelivery();
      },
    });
    const credentials = createCredentialLifecycle({ db, now });
    const adminCapability = await ensureAdminCapability(config.admin_capability_path, credentials);
    // [ledger.default_policy] as configured now holds for every agent that follows it.
    const following = admin.applyDefaultPolicy();
    service.ownerAccountId();
    const claims = createExecutorClaims({ db, now });
    // Said once per change at error level, on stderr (the supervisor's pipe), not on the full disk.
    const disk = watchDiskSpace({
      paths: [dirname(config.database_path)],
      now: () => Date.now(),
      onChange: (full, before) => {
        if (full !== null) options.logger.error({ event: 'ledger_disk_full', reason: 'disk_full', path: full.path, available_bytes: full.availableBytes, min_free_bytes: MIN_FREE_BYTES });
        else if (before !== null) options.logger.info({ event: 'ledger_disk_space_recovered', path: before.path });
      },
    });
    // Webhook delivery runs in this process, apart from request handling (docs/ledger.md "Webhooks").
    const webhookStore = createWebhookStore(db, now);
    const settings = deliverySettings(config.webhook_delivery);
    const delivery =
      options.webhookDelivery === 'thread'
        ? startDeliveryThread({ databasePath: config.database_path, db, settings, logger: options.logger })
        : startWebhookDelivery({ store: webhookStore, logger: options.logger, now, settings });
    wakeDelivery = () => {
      delivery.wake();
    };
    const webhooks = createWebhookSinks(webhookStore, wakeDelivery);
    const metricsReads = createMetricsReads(db);
    const metrics = createLedgerMetrics({
      reads: metricsReads,
      now,
      notReady: async () => ((await disk.current()) === null ? null : 'disk_full'),
      budgets: () => budgetsRemaining(service.budgetStandings(), metricsReads.agentNames()),
      webhookDeliveries: () => deliveriesDone(webhookStore.counts()),
    });
    const app = buildLedgerApp({
      webhooks,
      metrics,
      service,
      admin,
      credentials,
      claims,
      buildInfo,
      contractLevel: config.contract_level,
      logger: options.logger,
      diskFull: () => disk.current(),
      ...(options.rejectionSummary === undefined ? {} : { rejectionSummary: options.rejectionSummary }),
      ...(options.tls === undefined ? {} : { tls: options.tls }),
    });
    registerEnrolmentRoutes(app, credentials, createExecutorEnrolments({ db, now, admin, credentials }));
    // An expiry is recorded (its event written) even when nobody reads the authorization.
    const sweeping = sweepExpiriesEvery(options.expirySweepMs ?? 5000, service.sweepExpiries, options.logger);
    return {
      buildInfo,
      service,
      admin,
      credentials,
      app,
      webhooks,
      adminCapability,
      defaultPolicyAppliedTo: following.length,
      unattributedClaims: claims.unattributedCount(),
      crashPointsEnabled: crashPoints.enabled,
      close() {
        clearInterval(sweeping);
        service.closeEvents();
        delivery.stop();
        db.close();
      },
    };
  } catch (error) {
    db.close();
    throw error;
  }
}

/** The configured delivery timings and retention over the defaults (docs/ledger.md "Webhooks"). */
function deliverySettings(configured: LedgerConfig['webhook_delivery'] | undefined): WebhookDeliverySettings {
  if (configured === undefined) return DEFAULT_WEBHOOK_DELIVERY;
  return {
    ...DEFAULT_WEBHOOK_DELIVERY,
    timeoutMs: configured.timeout_ms,
    firstRetryMs: configured.first_retry_ms,
    maxRetryMs: configured.max_retry_ms,
    deliveredRetentionMs: configured.delivered_retention_days * 86_400_000,
  };
}
