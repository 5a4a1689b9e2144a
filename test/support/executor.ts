import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import { PassThrough } from 'node:stream';
import { randomUUID } from 'node:crypto';
import Database from 'better-sqlite3';
import { pino } from 'pino';
import { readBuildInfo } from '../../src/build-info.js';
import { parseExecutorConfig } from '../../src/config/parse-executor-config.js';
import type { ExecutorConfig } from '../../src/config/executor-config-schema.js';
import { generateCapability } from '../../src/credentials/capability.js';
import { createAdmission } from '../../src/executor/admission.js';
import { createReconciliation } from '../../src/executor/reconciliation.js';
import { createArtifactStore } from '../../src/executor/artifact-store.js';
import type { ExecutionScheduler } from '../../src/executor/execution-scheduler.js';
import { buildExecutorApp } from '../../src/executor/http/executor-app.js';
import { createLedgerGateway } from '../../src/executor/ledger-gateway.js';
import { activeTargets, providerCatalog } from '../../src/executor/provider-catalog.js';
import { createReadiness, type Readiness } from '../../src/executor/readiness.js';
import { createExecutionStore, type ExecutionStore } from '../../src/executor/store/execution-store.js';
import { EXECUTOR_MIGRATIONS } from '../../src/executor/store/migrations.js';
import { openDatabase } from '../../src/storage/open-database.js';
import { makeTempDir, removeDir } from './cli.js';
import { sandboxConfig, type JsonObject } from './config-fixtures.js';
import { mintCredential, type TestLedger } from './ledger.js';

export interface TestExecutor {
  readonly url: string;
  readonly dir: string;
  readonly caller: string;
  readonly store: ExecutionStore;
  readonly readiness: Readiness;
  readonly config: ExecutorConfig;
  readonly logs: () => Record<string, unknown>[];
  query<T>(sql: string, ...params: unknown[]): T[];
  close(): Promise<void>;
}

/** The shipped example with a sandbox target whose `square` preset has no price. */
export function executorTestConfig(dir: string, ledgerUrl: string, change?: (config: JsonObject) => void): ExecutorConfig {
  const document = sandboxConfig();
  (document.ledger as JsonObject).endpoint = ledgerUrl;
  document.storage = { database_path: join(dir, 'executor.db'), artifact_root: join(dir, 'artifacts'), catalog_path: join(dir, 'catalog.json') };
  document.development_allowance = true;
  const target = (document.execution_targets as JsonObject[])[0] as JsonObject;
  delete ((target.pricing as JsonObject).by_image_size as JsonObject).square;
  change?.(document);
  const parsed = parseExecutorConfig(document);
  if (!parsed.ok) throw new Error(`bad test config: ${JSON.stringify(parsed.issues)}`);
  return parsed.value;
}

/**
 * A real executor app on a real SQLite file and loopback port, in this process, talking to a
 * real ledger over HTTP with a real executor credential. The scheduler can be swapped to make
 * scheduling fail; readiness starts restored.
 */
export async function startTestExecutor(
  ledger: TestLedger,
  options: { scheduler?: ExecutionScheduler; change?: (config: JsonObject) => void } = {},
): Promise<TestExecutor> {
  const dir = await makeTempDir('lexec-executor-');
  const config = executorTestConfig(dir, ledger.url, options.change);
  const db = openDatabase(config.storage.database_path, EXECUTOR_MIGRATIONS);
  const store = createExecutionStore(db);
  const readiness = createReadiness();
  readiness.restore();
  const credential = await mintCredential(ledger, 'executor');
  const ledgerGateway = createLedgerGateway({ endpoint: ledger.url, credential });
  const scheduler = options.scheduler ?? { schedule: () => Promise.resolve() };
  const targets = () => activeTargets(config);
  const admission = createAdmission({
    store,
    ledger: ledgerGateway,
    scheduler,
    readiness,
    targets,
    providerMode: config.providers.mode,
    liveSpendCeiling: config.providers.mode === 'live' ? config.providers.spend_ceiling.amount_units : null,
  });
  const lines: string[] = [];
  const sink = new PassThrough();
  sink.on('data', (chunk: Buffer) => lines.push(...chunk.toString('utf8').split('\n').filter(Boolean)));
  const caller = generateCapability('caller');
  const app = buildExecutorApp({
    store,
    artifacts: createArtifactStore(config.storage.artifact_root),
    admission,
    readiness,
    buildInfo: readBuildInfo(),
    catalog: () => providerCatalog(config, false),
    targets,
    callerCapability: caller,
    reconciliationCapability: null,
    reconciliation: createReconciliation({ store, ledger: ledgerGateway }),
    logger: pino(sink),
  });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const { port } = app.server.address() as AddressInfo;
  const reader = new Database(config.storage.database_path, { readonly: true });
  reader.defaultSafeIntegers(true);
  return {
    url: `http://127.0.0.1:${port}`,
    dir,
    caller,
    store,
    readiness,
    config,
    logs: () => lines.map((line) => JSON.parse(line) as Record<string, unknown>),
    query: <T>(sql: string, ...params: unknown[]) => reader.prepare(sql).all(...params) as T[],
    async close() {
      await app.close();
      ledgerGateway.close();
      reader.close();
      db.close();
      await removeDir(dir);
    },
  };
}

/** A complete, valid execution request for `tokenId`. */
export function executionRequest(tokenId: string, overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    schema_version: 2,
    spend_auth_token_id: tokenId,
    input: { prompt: 'a lighthouse at dusk', image_count: 2, image_size: 'square_hd' },
    input_schema_version: 1,
    target_id: 'lexec:target:v1:flux-schnell',
    ...overrides,
  };
}

export const unknownToken = () => randomUUID();

/** The request without `target_id`, to name the target by the legacy fields instead. */
export function withoutTargetId(request: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(request).filter(([key]) => key !== 'target_id'));
}
