import { mkdir, rename, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import type { AddressInfo } from 'node:net';
import { pino } from 'pino';
import { readBuildInfo } from '../build-info.js';
import { bigintAsString } from '../domain/canonical-json.js';
import { UserError } from '../errors.js';
import { loadExecutorConfig } from '../services/validate-executor-config.js';
import { openDatabase } from '../storage/open-database.js';
import { acquireProcessLock } from '../storage/process-lock.js';
import { createAdmission } from './admission.js';
import { createEmbeddedEngine } from './engine/embedded-engine.js';
import { createExecutionRunner } from './execution-runner.js';
import { createFalQueueClient } from './provider/fal-queue-client.js';
import { operationDeadlineMs, providerEndpoint } from './provider/provider-endpoint.js';
import { createArtifactStore } from './artifact-store.js';
import { loadExecutorCredentials, readSecret } from './executor-credentials.js';
import { buildExecutorApp } from './http/executor-app.js';
import { proveLedgerCompatible } from './ledger-compatibility.js';
import { createLedgerGateway, LedgerUnavailable } from './ledger-gateway.js';
import { activeTargets, providerCatalog } from './provider-catalog.js';
import { createReadiness } from './readiness.js';
import { createReconciliation } from './reconciliation.js';
import { createReadinessMonitor, systemTimers } from './readiness-monitor.js';
import { createExecutionStore } from './store/execution-store.js';
import { EXECUTOR_MIGRATIONS } from './store/migrations.js';

export interface ExecutorStopped {
  readonly status: 'stopped';
  readonly signal: string;
}

/** How long shutdown waits for running activities before leaving them to the next start. */
const DRAIN_BOUND_MS = 10_000;

/**
 * Runs the executor until SIGINT or SIGTERM (spec §1, §8 Operations 1): loads its configuration
 * and credentials, opens and migrates its own database, listens on loopback, and becomes ready
 * once the ledger is proven compatible. On a signal it withdraws readiness, stops accepting
 * requests, lets in-flight ones finish and closes the database. An incompatible ledger stops it.
 */
export async function serveExecutor(configPath: string): Promise<ExecutorStopped> {
  const config = await loadExecutorConfig(configPath);
  if (config.workflow_engine.mode !== 'embedded') {
    throw new UserError('workflow_engine_unavailable', `The ${config.workflow_engine.mode} workflow engine is not available in this release.`, {
      nextStep: 'Use "workflow_engine": {"mode": "embedded"}; Temporal modes arrive in a later release.',
      issues: [{ path: 'workflow_engine.mode', message: 'only "embedded" runs in this release' }],
    });
  }
  const credentials = await loadExecutorCredentials(config);
  const liveKey = config.providers.mode === 'live' ? await readSecret(config.providers.credential, 'provider credential') : undefined;
  const providerCredentialPresent = liveKey !== undefined;
  const logger = pino({ base: { service: 'executor' }, timestamp: pino.stdTimeFunctions.isoTime }, pino.destination({ dest: 2, sync: true }));
  // One executor per database: its engine takes over runs that an earlier process left.
  const unlock = await lockDatabase(config.storage.database_path);
  const db = openDatabase(config.storage.database_path, EXECUTOR_MIGRATIONS);
  try {
    await mkdir(config.storage.artifact_root, { recursive: true, mode: 0o700 });
    const buildInfo = readBuildInfo();
    const store = createExecutionStore(db);
    const readiness = createReadiness();
    const ledger = createLedgerGateway({ endpoint: config.ledger.endpoint, credential: credentials.ledger });
    const targets = () => activeTargets(config);
    const catalog = providerCatalog(config, providerCredentialPresent);
    await mkdir(dirname(config.storage.catalog_path), { recursive: true, mode: 0o700 });
    const temporary = `${config.storage.catalog_path}.tmp`;
    await writeFile(temporary, `${JSON.stringify(catalog, bigintAsString, 2)}\n`);
    await rename(temporary, config.storage.catalog_path);

    const artifacts = createArtifactStore(config.storage.artifact_root);
    const endpoint = providerEndpoint(config, liveKey);
    const provider = endpoint === null ? null : createFalQueueClient(endpoint);
    const runActivity =
      provider === null
        ? () => Promise.resolve({ kind: 'done' as const })
        : createExecutionRunner({
            store,
            provider,
            ledger,
            artifacts,
            operationDeadlineMs: operationDeadlineMs(config),
            log: (event) => {
              logger.info(event);
            },
          });
    const engine = createEmbeddedEngine({
      db,
      runActivity,
      // `pending → scheduled` in the commit that creates the run (one commit per hand-off).
      onScheduled: (executionId) => {
        store.recordScheduled(executionId);
      },
      onActivityError: (executionId, phase, error) => {
        logger.error({ event: 'execution_activity_error', execution_id: executionId, phase, error_name: error instanceof Error ? error.name : 'unknown' });
      },
    });
    engine.start();
    // Restart recovery: every non-terminal execution is scheduled again at its stable id.
    for (const execution of store.nonTerminal()) {
      await engine.schedule(execution.execution_id, execution.workflow_id);
      if (execution.state === 'pending') store.markScheduled(execution.execution_id);
    }

    const app = buildExecutorApp({
      store,
      artifacts,
      admission: createAdmission({
        store,
        ledger,
        scheduler: engine,
        readiness,
        targets,
        providerMode: config.providers.mode,
        liveSpendCeiling: config.providers.mode === 'live' ? config.providers.spend_ceiling.amount_units : null,
      }),
      readiness,
      buildInfo,
      catalog: () => catalog,
      targets,
      callerCapability: credentials.caller,
      reconciliationCapability: credentials.reconciliation,
      reconciliation: createReconciliation({ store, ledger }),
      logger,
    });
    await app.listen({ host: config.http.host, port: config.http.port });
    const { port } = app.server.address() as AddressInfo;
    logger.info({
      event: 'executor_started',
      host: config.http.host,
      port,
      product_version: buildInfo.product_version,
      workflow_engine_mode: config.workflow_engine.mode,
      providers_mode: config.providers.mode,
    });

    // Readiness: startup needs the engine's poller proof and the ledger compatibility proof;
    // afterwards the monitor follows spec §3 rules 2-12. An incompatible ledger at startup ends
    // the process (waiting cannot fix it); later failures only withdraw readiness.
    const monitor = createReadinessMonitor({
      clock: Date,
      timers: systemTimers(),
      readiness,
      logger,
      engine: () => Promise.resolve({ outcome: 'ok', pollers: engine.pollers() }),
      ledger: () => proveLedgerCompatible(ledger, { pinnedVersion: config.ledger.product_version, developmentAllowance: config.development_allowance, self: buildInfo }),
      ledgerFailureReason: (error) => (error instanceof UserError ? error.code : error instanceof LedgerUnavailable ? 'unavailable' : undefined),
      isFatalAtStartup: (error) => error instanceof UserError,
    });
    const fatal = monitor.start().then(
      () => new Promise<never>(() => undefined),
      (error: unknown) => (error instanceof UserError ? error : new UserError('executor_startup_failed', 'The executor could not start.', { nextStep: 'See the log.' })),
    );
    const signal = new Promise<string>((resolve) => {
      process.once('SIGINT', () => {
        resolve('SIGINT');
      });
      process.once('SIGTERM', () => {
        resolve('SIGTERM');
      });
    });
    const outcome = await Promise.race([signal, fatal]);
    readiness.withdraw('shutting_down');
    monitor.stop();
    const shutdown = async () => {
      await app.close();
      const drained = await engine.drain(DRAIN_BOUND_MS);
      if (!drained.drained) logger.warn({ event: 'executor_drain_incomplete', in_flight: drained.inFlight });
      provider?.close();
      ledger.close();
    };
    if (outcome instanceof UserError) {
      logger.error({ event: 'executor_incompatible_ledger', code: outcome.code });
      await shutdown();
      throw outcome;
    }
    logger.info({ event: 'executor_stopping', signal: outcome });
    await shutdown();
    logger.info({ event: 'executor_stopped', signal: outcome });
    return { status: 'stopped', signal: outcome };
  } finally {
    db.close();
    await unlock();
  }
}

/** Takes the executor's exclusive lock on its database; a second live executor is refused. */
async function lockDatabase(databasePath: string): Promise<() => Promise<void>> {
  await mkdir(dirname(databasePath), { recursive: true, mode: 0o700 });
  return acquireProcessLock(
    `${databasePath}.lock`,
    () =>
      new UserError('executor_database_locked', `Another executor is using ${databasePath}.`, {
        nextStep: 'Stop the other executor first; one executor owns a database at a time.',
      }),
  );
}
