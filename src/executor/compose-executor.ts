import { readCaFile } from '../http/tls-trust.js';
import { mkdir, rename, rm, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import type Database from 'better-sqlite3';
import type { Logger } from 'pino';
import { readBuildInfo, type BuildInfo } from '../build-info.js';
import type { ExecutorConfig } from './config/executor-config-schema.js';
import { createCrashPoints, type CrashPoints } from '../crash-points.js';
import { bigintAsString } from '../domain/canonical-json.js';
import { UserError } from '../errors.js';
import type { RejectionSummaryTiming } from '../http/rejection-summariser.js';
import { createAdmission } from './admission.js';
import { createArtifactStore, removeArtifactTemporaries } from './artifact-store.js';
import { findFullDisk, MIN_FREE_BYTES } from '../storage/disk-space.js';
import { createWorkflowEngine, type ConfiguredEngine } from './engine/create-workflow-engine.js';
import { rescheduleClosedRuns, type ClosedRunRescheduler } from './engine/reschedule-closed-runs.js';
import { ExecutionNotOwned, type RunActivity } from './engine/workflow-engine.js';
import { createExecutionChanges } from './execution-changes.js';
import { createExecutionRunner } from './execution-runner.js';
import { createExecutorMetrics } from './executor-metrics.js';
import type { ExecutionScheduler } from './execution-scheduler.js';
import type { ExecutorCredentials } from './executor-credentials.js';
import { buildExecutorApp } from './http/executor-app.js';
import { proveLedgerCompatible } from './ledger-compatibility.js';
import { createLedgerGateway, LedgerUnavailable, type LedgerGateway } from './ledger-gateway.js';
import { createOrphanClaimSweep, type OrphanClaimSweep } from './orphan-claim-sweep.js';
import { createFalQueueClient, type FalQueueClient } from './provider/fal-queue-client.js';
import { operationDeadlineMs, pollingPolicy, providerEndpoint } from './provider/provider-endpoint.js';
import { activeTargets, providerCatalog } from './provider-catalog.js';
import { createReadiness, type Readiness } from './readiness.js';
import { createReadinessMonitor, systemTimers, type ReadinessMonitor } from './readiness-monitor.js';
import { createReconciliation } from './reconciliation.js';
import { createExecutionStore, type ExecutionStore } from './store/execution-store.js';
import { createInstallationStore } from './store/installation-store.js';
import { createCredentialStore } from './store/credential-store.js';
import { createCapabilityAuthenticator } from './credentials/authenticate-capability.js';
import { registerConfiguredCredentials, replacementNextStep } from './credentials/register-configured-credentials.js';
import { developmentRescheduleIntervalMs } from './engine/development-reschedule-interval.js';

/** How often readiness is sampled until it is first established (afterwards the monitor's 5 s). */
const STARTUP_PROBE_INTERVAL_MS = 250;

export interface ComposedExecutor {
  readonly buildInfo: BuildInfo;
  readonly store: ExecutionStore;
  readonly readiness: Readiness;
  readonly engine: ConfiguredEngine;
  readonly app: ReturnType<typeof buildExecutorApp>;
  readonly monitor: ReadinessMonitor;
  /** Starts runs again that closed under a live execution (Temporal engines; null for the embedded one). serve starts it. */
  readonly closedRuns: ClosedRunRescheduler | null;
  /** Releases this executor's claims that never became an execution; serve starts it once ready. */
  readonly orphanClaims: OrphanClaimSweep;
  /** Development crash points (armed only in a development build given LEXEC_DEV_CRASH_FILE). */
  readonly crashPoints: CrashPoints;
  /** Closes what the parts hold open besides the engine (provider and ledger connections). */
  close(): void;
}

export interface ComposeExecutorOptions {
  readonly config: ExecutorConfig;
  /**
   * The caller, ledger and reconciliation capabilities (serve loads them; tests mint their own).
   * The caller and reconciliation ones are registered in the credential table here; requests are
   * authenticated against the table.
   */
  readonly credentials: ExecutorCredentials;
  /** The configuration's path, named in the next step of a start refused for a revoked capability. */
  readonly configPath?: string;
  /** The provider key in live mode (undefined otherwise). */
  readonly liveKey: string | undefined;
  /** The executor's open, migrated database; whoever opened it closes it. */
  readonly db: Database.Database;
  /** Where every part logs (serve: stderr; tests: a sink they read back). */
  readonly logger: Logger;
  /**
   * What admission hands executions to instead of the engine. Unset in serve (the engine
   * schedules); tests set it to admit without running anything or to make scheduling fail.
   */
  readonly scheduler?: ExecutionScheduler;
  /** The process environment (serve: process.env), read only for development crash points. */
  readonly env?: NodeJS.ProcessEnv;
  /** How repeated rejections are collapsed in the log (serve: the system clock, 60 s; tests: a fake clock). */
  readonly rejectionSummary?: RejectionSummaryTiming;
  /** The certificate and key to serve HTTPS with (`http.tls`, src/http/server-tls.ts); absent: plain HTTP on loopback. */
  readonly tls?: { readonly cert: string; readonly key: string };
}

/**
 * The executor's one composition root (STYLE.md habit 12): the parts of a running executor built
 * from its configuration, its credentials and its open database. Nothing listens and nothing runs
 * yet; serve-executor.ts starts them, in order, and stops them. The tests build their executor
 * here too (test/support/executor.ts), so what they exercise is what serve runs.
 */
export async function composeExecutor(options: ComposeExecutorOptions): Promise<ComposedExecutor> {
  const { config, credentials, db, logger } = options;
  // First: a configured capability the table holds as revoked ends the start before anything changes.
  const authenticate = registerCredentials(options);
  await mkdir(config.storage.artifact_root, { recursive: true, mode: 0o700 });
  // What an artifact write cut short left (a full disk, a crash): never an artifact, only space taken.
  const leftovers = await removeArtifactTemporaries(config.storage.artifact_root);
  if (leftovers > 0) logger.warn({ event: 'artifact_temporaries_removed', files: leftovers });
  const buildInfo = readBuildInfo();
  const crashPoints = createCrashPoints({ buildKind: buildInfo.build_kind, env: options.env ?? {} });
  const changes = createExecutionChanges();
  const store = createExecutionStore(db, Date.now, (executionId) => {
    changes.notify(executionId);
  });
  const readiness = createReadiness();
  const metrics = createExecutorMetrics({ db, readiness });
  // The team CA an https:// ledger must prove itself against; a bad file ends the start here.
  const ledgerCa = config.ledger.ca_file === undefined ? undefined : await readCaFile(config.ledger.ca_file, 'ledger.ca_file');
  const ledger = createLedgerGateway({ endpoint: config.ledger.endpoint, credential: credentials.ledger, ...(ledgerCa === undefined ? {} : { caCertificate: ledgerCa }) });
  const targets = () => activeTargets(config);
  const catalog = providerCatalog(config, options.liveKey !== undefined);
  await publishCatalog(config.storage.catalog_path, catalog);

  const artifacts = createArtifactStore(config.storage.artifact_root);
  const endpoint = providerEndpoint(config, options.liveKey);
  const provider = endpoint === null ? null : metrics.timedProvider(createFalQueueClient(endpoint));
  // The monitor is built after the engine; the engine may ask it for a sample before that.
  const late: { monitor?: ReadinessMonitor } = {};
  const installation = createInstallationStore(db);
  const engine = await createWorkflowEngine(config.workflow_engine, {
    installationId: installation.installationId(),
    onHealthChange: () => late.monitor?.sampleNow(),
    db,
    store,
    runActivity: metrics.timedActivity(runner(config, { store, provider, ledger, artifacts, logger, crashPoints })),
    logger,
    onActivityError: (executionId, phase, error) => {
      logger.error({ event: 'execution_activity_error', execution_id: executionId, phase, error_name: error instanceof Error ? error.name : 'unknown' });
    },
  });

  const admission = createAdmission({
    store,
    ledger,
    scheduler: options.scheduler ?? engine,
    readiness,
    targets,
    providerMode: config.providers.mode,
    liveSpendCeiling: config.providers.mode === 'live' ? config.providers.spend_ceiling.amount_units : null,
    crashPoints,
    onSchedulingFailed: () => late.monitor?.sampleNow(),
  });
  const orphanClaims = createOrphanClaimSweep({
    ledger,
    store,
    admission,
    releaseAfterSeconds: config.orphan_claims.release_after_seconds,
    knownSince: installation.createdAt(),
    timers: systemTimers(),
    log: logger,
  });
  const app = buildExecutorApp({
    store,
    artifacts,
    admission,
    readiness,
    buildInfo,
    catalog: () => catalog,
    targets,
    authenticate,
    // No metrics capability configured: no metrics route (docs/metrics.md).
    metrics: (credentials.metrics ?? null) === null ? null : metrics.registry,
    reconciliation: createReconciliation({ store, ledger, crashPoints }),
    engineAddress: engine.description.address ?? null,
    changes,
    logger,
    crashPoints,
    ...(options.rejectionSummary === undefined ? {} : { rejectionSummary: options.rejectionSummary }),
    ...(options.tls === undefined ? {} : { tls: options.tls }),
  });

  // Readiness: startup needs the engine's poller proof and the ledger compatibility proof;
  // afterwards the monitor follows spec §3 rules 2-12. An incompatible ledger at startup ends
  // the process (waiting cannot fix it); later failures only withdraw readiness.
  const monitor = createReadinessMonitor({
    clock: Date,
    timers: systemTimers(),
    readiness,
    logger,
    startupIntervalMs: STARTUP_PROBE_INTERVAL_MS,
    engine: (request) => engine.probe(request),
    ledger: () => proveLedgerCompatible(ledger, { pinnedVersion: config.ledger.product_version, developmentAllowance: config.development_allowance, self: buildInfo }),
    ledgerFailureReason: (error) => (error instanceof UserError ? error.code : error instanceof LedgerUnavailable ? 'unavailable' : undefined),
    isFatalAtStartup: (error) => error instanceof UserError,
    disk: () => findFullDisk(writtenDirectories(config)),
    minFreeBytes: MIN_FREE_BYTES,
  });

  late.monitor = monitor;
  const closedRuns =
    engine.runs === undefined
      ? null
      : rescheduleClosedRuns({
          store,
          runs: engine.runs,
          record: (record) => {
            installation.recordReschedule(record);
          },
          logger,
          intervalMs: developmentRescheduleIntervalMs(buildInfo.build_kind, options.env ?? {}),
        });
  return {
    closedRuns,
    buildInfo,
    store,
    readiness,
    engine,
    app,
    monitor,
    orphanClaims,
    crashPoints,
    close() {
      provider?.close();
      ledger.close();
    },
  };
}

/**
 * Registers the configured caller and reconciliation capabilities (a revoked one fails the start
 * closed) and returns the authentication of every request against the credential table.
 */
function registerCredentials(options: ComposeExecutorOptions): ReturnType<typeof createCapabilityAuthenticator> {
  const { config, credentials, db, logger } = options;
  const store = createCredentialStore(db);
  const outcome = registerConfiguredCredentials(
    store,
    { caller: credentials.caller, reconciliation: credentials.reconciliation, metrics: credentials.metrics ?? null },
    { now: Date.now(), nextStep: (kind) => replacementNextStep(config, kind, options.configPath) },
  );
  for (const registered of outcome.registered) logger.info({ event: 'executor_credential_registered', credential_id: registered.credentialId, kind: registered.kind });
  if (outcome.superseded.length > 0) logger.warn({ event: 'executor_credentials_superseded', credential_ids: outcome.superseded });
  return createCapabilityAuthenticator(store);
}

function runner(
  config: ExecutorConfig,
  parts: { store: ExecutionStore; provider: FalQueueClient | null; ledger: LedgerGateway; artifacts: ReturnType<typeof createArtifactStore>; logger: Logger; crashPoints: CrashPoints },
): RunActivity {
  const { provider } = parts;
  // Nothing is admitted without a provider; a workflow of another installation is still not ours.
  if (provider === null) {
    return (executionId) => (parts.store.execution(executionId) === undefined ? Promise.reject(new ExecutionNotOwned()) : Promise.resolve({ kind: 'done' as const }));
  }
  return createExecutionRunner({
    store: parts.store,
    provider,
    ledger: parts.ledger,
    artifacts: parts.artifacts,
    operationDeadlineMs: operationDeadlineMs(config),
    polling: pollingPolicy(config),
    crashPoints: parts.crashPoints,
    log: (event) => {
      parts.logger.info(event);
    },
  });
}

/** Where the executor writes: its database, its artifacts, and a managed engine's data. */
function writtenDirectories(config: ExecutorConfig): string[] {
  const engine = config.workflow_engine;
  return [dirname(config.storage.database_path), config.storage.artifact_root, ...(engine.mode === 'managed_local' ? [engine.data_dir] : [])];
}

/** The sanitized catalog, published atomically for the launcher (`stack catalog`). */
async function publishCatalog(path: string, catalog: unknown): Promise<void> {
  await mkdir(dirname(path), { recursive: true, mode: 0o700 });
  const temporary = `${path}.tmp`;
  // A fresh file, so its mode is 0600 whatever the umask, and whatever mode a leftover had.
  await rm(temporary, { force: true });
  await writeFile(temporary, `${JSON.stringify(catalog, bigintAsString, 2)}\n`, { mode: 0o600, flag: 'wx' });
  await rename(temporary, path);
}
