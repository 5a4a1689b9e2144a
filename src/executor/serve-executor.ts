import { mkdir } from 'node:fs/promises';
import { dirname } from 'node:path';
import type { AddressInfo } from 'node:net';
import type { Server as TlsServer } from 'node:tls';
import { followTlsReload, loadServerTls, type ServerTlsMaterial } from '../http/server-tls.js';
import { pino, type Logger } from 'pino';
import type { ExecutorConfig } from './config/executor-config-schema.js';
import { CRASH_FILE_ENV } from '../crash-points.js';
import { UserError } from '../errors.js';
import { loadExecutorConfig } from './config/validate-executor-config.js';
import { openDatabase } from '../storage/open-database.js';
import { restrictProcessUmask, tightenedEvent } from '../storage/private-state.js';
import { acquireProcessLock } from '../storage/process-lock.js';
import { composeExecutor, type ComposedExecutor } from './compose-executor.js';
import { rescheduleNonTerminal } from './engine/reschedule-non-terminal.js';
import { loadExecutorCredentials, readSecret } from './executor-credentials.js';
import { EXECUTOR_MIGRATIONS } from './store/migrations/executor-migrations.js';

export interface ExecutorStopped {
  readonly status: 'stopped';
  readonly signal: string;
}

/** How long shutdown waits for running activities before leaving them to the next start. */
const DRAIN_BOUND_MS = 10_000;

/**
 * Runs the executor until SIGINT or SIGTERM (spec §1, §8 Operations 1): loads its configuration
 * and credentials, opens and migrates its own database, starts its workflow engine (and, in
 * managed_local mode, the engine's child), schedules again what an earlier process left
 * unfinished, listens on loopback, and becomes ready once the engine has a polling worker and the
 * ledger is proven compatible. On a signal it withdraws readiness, stops accepting requests,
 * drains the worker, stops only its own engine child and closes the database. An incompatible
 * ledger stops it.
 */
export async function serveExecutor(configPath: string): Promise<ExecutorStopped> {
  // Before anything is created: the managed Temporal server (a child) writes its files under it.
  restrictProcessUmask();
  // Listened for from the first moment: a stop that arrives while a managed engine child is
  // starting still stops that child, instead of leaving it behind.
  const received: { signal?: string } = {};
  const signal = new Promise<string>((resolve) => {
    const on = (name: string) => () => {
      received.signal = name;
      resolve(name);
    };
    process.once('SIGINT', on('SIGINT'));
    process.once('SIGTERM', on('SIGTERM'));
  });
  const config = await loadExecutorConfig(configPath);
  // Read and checked before anything is opened: a bad certificate or key stops the start here.
  const tls = config.http.tls === undefined ? undefined : await loadServerTls(config.http.tls);
  const logger = pino({ base: { service: 'executor' }, timestamp: pino.stdTimeFunctions.isoTime }, pino.destination({ dest: 2, sync: true }));
  // The ledger credential's file is followed while the executor runs (a rotation replaces it).
  const credentials = await loadExecutorCredentials(config, {
    onLedgerCredentialChange: (change) => {
      if (change.outcome === 'followed') logger.info({ event: 'executor_ledger_credential_changed' });
      else logger.warn({ event: 'executor_ledger_credential_refused', code: change.code });
    },
  });
  const liveKey = config.providers.mode === 'live' ? await readSecret(config.providers.credential, 'provider credential') : undefined;
  // One executor per database: its engine takes over runs that an earlier process left.
  const unlock = await lockDatabase(config.storage.database_path);
  try {
    // A refused migration ends the start here, leaving the database as it was and no lock.
    const db = openDatabase(config.storage.database_path, EXECUTOR_MIGRATIONS, {
      onTightened: (files) => {
        for (const file of files) logger.warn(tightenedEvent(file));
      },
    });
    try {
      const executor = await composeExecutor({ config, configPath, credentials, liveKey, db, logger, env: process.env, ...(tls === undefined ? {} : { tls }) });
      let stopped: ExecutorStopped;
      try {
        // A stop that came while a managed engine child was starting: stop it again at once.
        stopped = received.signal === undefined ? await run(config, executor, logger, signal, tls) : { status: 'stopped', signal: received.signal };
      } finally {
        await executor.engine.close();
        executor.close();
      }
      logger.info({ event: 'executor_stopped', signal: stopped.signal });
      return stopped;
    } finally {
      db.close();
    }
  } finally {
    await unlock();
  }
}

async function run(config: ExecutorConfig, executor: ComposedExecutor, logger: Logger, signal: Promise<string>, tls: ServerTlsMaterial | undefined): Promise<ExecutorStopped> {
  const { app, engine, monitor, readiness } = executor;
  await engine.start();
  // Restart recovery: every non-terminal execution is scheduled again at its stable id. An
  // embedded engine is local and answers at once; a Temporal engine that cannot be reached yet is
  // retried in the background while reads are already served.
  const recovery = rescheduleNonTerminal({
    store: executor.store,
    scheduler: engine,
    onRetry: (failures, remaining) => {
      logger.warn({ event: 'executor_recovery_retry', failures, remaining });
    },
  });
  if (engine.description.mode === 'embedded') await recovery.done;
  else {
    void recovery.done.then(({ scheduled, stopped }) => {
      if (stopped) return;
      logger.info({ event: 'executor_recovery_scheduled', executions: scheduled });
      // Then runs the engine closed under a live execution: once the engine answers, and every 30 s.
      executor.closedRuns?.start();
    });
  }

  await app.listen({ host: config.http.host, port: config.http.port });
  const { port } = app.server.address() as AddressInfo;
  // SIGHUP: the certificate and key are read again and served to new connections.
  const stopFollowing = config.http.tls === undefined ? () => undefined : followTlsReload(app.server as unknown as TlsServer, config.http.tls, logger);
  logger.info({
    event: 'executor_started',
    host: config.http.host,
    port,
    scheme: tls === undefined ? 'http' : 'https',
    ...(tls === undefined ? {} : { tls_serial_number: tls.serialNumber, tls_valid_to: tls.validTo }),
    product_version: executor.buildInfo.product_version,
    workflow_engine_mode: engine.description.mode,
    workflow_engine: engine.description,
    providers_mode: config.providers.mode,
  });
  if (executor.crashPoints.enabled) logger.warn({ event: 'crash_points_enabled', variable: CRASH_FILE_ENV });

  const fatal = monitor.start().then(
    (startup) => {
      // Orphan claims are swept from the first moment the executor is ready, then periodically.
      if (startup === 'ready') executor.orphanClaims.start();
      return new Promise<never>(() => undefined);
    },
    (error: unknown) => (error instanceof UserError ? error : new UserError('executor_startup_failed', 'The executor could not start.', { nextStep: 'See the log.' })),
  );
  const outcome = await Promise.race([signal, fatal]);
  readiness.withdraw('shutting_down');
  stopFollowing();
  monitor.stop();
  await executor.orphanClaims.stop();
  recovery.stop();
  executor.closedRuns?.stop();
  if (outcome instanceof UserError) logger.error({ event: 'executor_incompatible_ledger', code: outcome.code });
  else logger.info({ event: 'executor_stopping', signal: outcome });
  await app.close();
  const drained = await engine.drain(DRAIN_BOUND_MS);
  if (!drained.drained) logger.warn({ event: 'executor_drain_incomplete', in_flight: drained.inFlight });
  if (outcome instanceof UserError) throw outcome;
  return { status: 'stopped', signal: outcome };
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
