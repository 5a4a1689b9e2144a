import { mkdir, rename, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import type { AddressInfo } from 'node:net';
import { pino } from 'pino';
import { readBuildInfo } from '../build-info.js';
import { bigintAsString } from '../domain/canonical-json.js';
import { UserError } from '../errors.js';
import { loadExecutorConfig } from '../services/validate-executor-config.js';
import { openDatabase } from '../storage/open-database.js';
import { createAdmission } from './admission.js';
import { createArtifactStore } from './artifact-store.js';
import { createDeferredScheduler } from './execution-scheduler.js';
import { loadExecutorCredentials, readSecret } from './executor-credentials.js';
import { buildExecutorApp } from './http/executor-app.js';
import { proveLedgerCompatible } from './ledger-compatibility.js';
import { createLedgerGateway, LedgerUnavailable } from './ledger-gateway.js';
import { activeTargets, providerCatalog } from './provider-catalog.js';
import { createReadiness } from './readiness.js';
import { createExecutionStore } from './store/execution-store.js';
import { EXECUTOR_MIGRATIONS } from './store/migrations.js';

export interface ExecutorStopped {
  readonly status: 'stopped';
  readonly signal: string;
}

/** How long to wait between startup attempts to prove the ledger compatible. */
const STARTUP_RETRY_MS = 2_000;

/**
 * Runs the executor until SIGINT or SIGTERM (spec §1, §8 Operations 1): loads its configuration
 * and credentials, opens and migrates its own database, listens on loopback, and becomes ready
 * once the ledger is proven compatible. On a signal it withdraws readiness, stops accepting
 * requests, lets in-flight ones finish and closes the database. An incompatible ledger stops it.
 */
export async function serveExecutor(configPath: string): Promise<ExecutorStopped> {
  const config = await loadExecutorConfig(configPath);
  const credentials = await loadExecutorCredentials(config);
  const providerCredentialPresent =
    config.providers.mode === 'live' ? await readSecret(config.providers.credential, 'provider credential').then(() => true) : false;
  const logger = pino({ base: { service: 'executor' }, timestamp: pino.stdTimeFunctions.isoTime }, pino.destination({ dest: 2, sync: true }));
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

    const app = buildExecutorApp({
      store,
      artifacts: createArtifactStore(config.storage.artifact_root),
      admission: createAdmission({ store, ledger, scheduler: createDeferredScheduler(), readiness, targets }),
      readiness,
      buildInfo,
      catalog: () => catalog,
      targets,
      callerCapability: credentials.caller,
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

    let stopping = false;
    const fatal = new Promise<UserError>((resolve) => {
      const attempt = async (): Promise<void> => {
        try {
          await proveLedgerCompatible(ledger, { pinnedVersion: config.ledger.product_version, developmentAllowance: config.development_allowance, self: buildInfo });
          readiness.restore();
          logger.info({ event: 'executor_ready' });
        } catch (error) {
          if (error instanceof UserError) {
            resolve(error);
            return;
          }
          logger.warn({ event: 'executor_dependency_probe', dependency: 'ledger', outcome: error instanceof LedgerUnavailable ? 'unavailable' : 'error' });
          readiness.withdraw('ledger_unavailable');
          if (!stopping) setTimeout(() => void attempt(), STARTUP_RETRY_MS).unref();
        }
      };
      void attempt();
    });
    const signal = new Promise<string>((resolve) => {
      process.once('SIGINT', () => { resolve('SIGINT'); });
      process.once('SIGTERM', () => { resolve('SIGTERM'); });
    });
    const outcome = await Promise.race([signal, fatal]);
    stopping = true;
    readiness.withdraw('shutting_down');
    if (outcome instanceof UserError) {
      logger.error({ event: 'executor_incompatible_ledger', code: outcome.code });
      await app.close();
      ledger.close();
      throw outcome;
    }
    logger.info({ event: 'executor_stopping', signal: outcome });
    await app.close();
    ledger.close();
    logger.info({ event: 'executor_stopped', signal: outcome });
    return { status: 'stopped', signal: outcome };
  } finally {
    db.close();
  }
}
