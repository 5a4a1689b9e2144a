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
import type { LedgerConfig } from './ledger-config.js';
import type { SpendPolicy } from './authorization-rules.js';
import { createLedgerService, type LedgerService } from './ledger-service.js';
import { LEDGER_MIGRATIONS } from './store/migrations.js';
import { createMetricsReads } from './store/metrics-reads.js';
import { createLedgerMetrics, type BudgetRemaining, type WebhookDeliveryCounts } from './ledger-metrics.js';

export interface ComposedLedger {
  readonly buildInfo: BuildInfo;
  readonly service: LedgerService;
  readonly admin: LedgerAdmin;
  readonly credentials: CredentialLifecycle;
  readonly app: ReturnType<typeof buildLedgerApp>;
  /** Whether the admin capability file was created now or found. */
  readonly adminCapability: AdminCapabilityOutcome;
  /** How many agents follow `[ledger.default_policy]` and had it applied at this start. */
  readonly defaultPolicyAppliedTo: number;
  /** Claims with no recorded claimant (made before ledger migration 4 with several executor credentials): left to a human. */
  readonly unattributedClaims: number;
  /** Whether development crash points are armed in this process. */
  readonly crashPointsEnabled: boolean;
  /** Closes the database (after the app is closed). */
  close(): void;
}

export interface ComposeLedgerOptions {
  /** The parts of the configuration a ledger needs (the listen address is serve's business). */
  readonly config: Pick<LedgerConfig, 'database_path' | 'admin_capability_path' | 'contract_level' | 'authorization_ttl_seconds'> & {
    readonly default_policy: SpendPolicy;
  };
  /** Where every part logs (serve: stderr; tests: a sink they read back). */
  readonly logger: Logger;
  /** The ledger's clock, ms since the epoch (serve: Date.now; tests: one they can move). */
  readonly now?: () => number;
  /** The process environment (serve: process.env), read only for development crash points. */
  readonly env?: NodeJS.ProcessEnv;
  /** How repeated rejections are collapsed in the log (serve: the system clock, 60 s; tests: a fake clock). */
  readonly rejectionSummary?: RejectionSummaryTiming;
  /** Calendar and installation-wide budgets for `GET /metrics` (the rolling 24 h cap is always reported). */
  readonly budgetsRemaining?: (now: number) => readonly BudgetRemaining[];
  /** Webhook delivery counts for `GET /metrics` (zeros when unset). */
  readonly webhookDeliveries?: () => WebhookDeliveryCounts;
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
    const admin = createLedgerAdmin({ db, now, defaultPolicy });
    const service = createLedgerService({
      db,
      now,
      contractLevel: config.contract_level,
      authorizationTtlMs: config.authorization_ttl_seconds * 1000,
      defaultPolicy,
      crashPoints,
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
    const metrics = createLedgerMetrics({
      reads: createMetricsReads(db),
      now,
      notReady: async () => ((await disk.current()) === null ? null : 'disk_full'),
      ...(options.budgetsRemaining === undefined ? {} : { budgets: options.budgetsRemaining }),
      ...(options.webhookDeliveries === undefined ? {} : { webhookDeliveries: options.webhookDeliveries }),
    });
    const app = buildLedgerApp({
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
    });
    return {
      buildInfo,
      service,
      admin,
      credentials,
      app,
      adminCapability,
      defaultPolicyAppliedTo: following.length,
      unattributedClaims: claims.unattributedCount(),
      crashPointsEnabled: crashPoints.enabled,
      close() {
        db.close();
      },
    };
  } catch (error) {
    db.close();
    throw error;
  }
}
