import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import { PassThrough } from 'node:stream';
import { randomUUID } from 'node:crypto';
import Database from 'better-sqlite3';
import type { FastifyInstance } from 'fastify';
import { pino } from 'pino';
import { parseExecutorConfig } from '../../src/executor/config/parse-executor-config.js';
import type { ExecutorConfig } from '../../src/executor/config/executor-config-schema.js';
import { generateCapability } from '../../src/credentials/capability.js';
import { composeExecutor } from '../../src/executor/compose-executor.js';
import type { ExecutionScheduler } from '../../src/executor/execution-scheduler.js';
import type { OrphanClaimSweep } from '../../src/executor/orphan-claim-sweep.js';
import type { Readiness } from '../../src/executor/readiness.js';
import type { ExecutionStore } from '../../src/executor/store/execution-store.js';
import { EXECUTOR_MIGRATIONS } from '../../src/executor/store/migrations/executor-migrations.js';
import { executionRequestBody } from '../../src/stack-client/paid-job/job-request.js';
import { openDatabase } from '../../src/storage/open-database.js';
import { makeTempDir, removeDir } from './cli.js';
import { sandboxConfig, type JsonObject } from './config-fixtures.js';
import { call, mintCredential, type TestLedger } from './ledger.js';

export interface TestExecutor {
  readonly url: string;
  readonly dir: string;
  readonly caller: string;
  /** The operator's reconciliation capability (the reconciliation routes and the list of executions). */
  readonly reconciliation: string;
  /** The executor's own capability at the ledger (kind executor). */
  readonly ledgerCredential: string;
  /** The scraper's capability (`GET /metrics`), when the test asked for one; null: no metrics route. */
  readonly metrics: string | null;
  /** The executor's app, for what a loopback socket cannot send (`inject` from another remote address). */
  readonly app: FastifyInstance;
  /** The orphan-claim sweep (never started here: a test calls sweep()). */
  readonly orphanClaims: OrphanClaimSweep;
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
 * real ledger over HTTP with a real executor credential, built by the executor's composition
 * root like `executor serve` builds it. The engine and the readiness monitor are never started:
 * admission hands executions to a scheduler that does nothing (or to the test's, to make
 * scheduling fail), and readiness starts restored.
 */
export async function startTestExecutor(
  ledger: TestLedger,
  options: { scheduler?: ExecutionScheduler; change?: (config: JsonObject) => void; metrics?: boolean } = {},
): Promise<TestExecutor> {
  const dir = await makeTempDir('lexec-executor-');
  const config = executorTestConfig(dir, ledger.url, options.change);
  const db = openDatabase(config.storage.database_path, EXECUTOR_MIGRATIONS);
  const lines: string[] = [];
  const sink = new PassThrough();
  sink.on('data', (chunk: Buffer) => lines.push(...chunk.toString('utf8').split('\n').filter(Boolean)));
  const caller = generateCapability('caller');
  const reconciliation = generateCapability('reconciliation');
  const ledgerCredential = await mintCredential(ledger, 'executor');
  const metrics = options.metrics === true ? generateCapability('metrics') : null;
  const executor = await composeExecutor({
    config,
    credentials: { caller, ledger: ledgerCredential, reconciliation, metrics },
    // Live mode needs a provider key to compose; nothing runs here, so it never leaves the process.
    liveKey: config.providers.mode === 'live' ? 'unused-test-live-key' : undefined,
    db,
    logger: pino(sink),
    scheduler: options.scheduler ?? { schedule: () => Promise.resolve() },
  });
  const { app, store, readiness } = executor;
  readiness.restore();
  await app.listen({ host: '127.0.0.1', port: 0 });
  const { port } = app.server.address() as AddressInfo;
  const reader = new Database(config.storage.database_path, { readonly: true });
  reader.defaultSafeIntegers(true);
  return {
    url: `http://127.0.0.1:${port}`,
    dir,
    caller,
    reconciliation,
    ledgerCredential,
    metrics,
    app,
    orphanClaims: executor.orphanClaims,
    store,
    readiness,
    config,
    logs: () => lines.map((line) => JSON.parse(line) as Record<string, unknown>),
    query: <T>(sql: string, ...params: unknown[]) => reader.prepare(sql).all(...params) as T[],
    async close() {
      await app.close();
      await executor.engine.close();
      executor.close();
      reader.close();
      db.close();
      await removeDir(dir);
    },
  };
}

/** A complete, valid execution request for `tokenId`, built as every lexec client builds one (the stack client's paid job). */
export function executionRequest(tokenId: string, overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    ...executionRequestBody({ tokenId, prompt: 'a lighthouse at dusk', targetId: 'lexec:target:v1:flux-schnell', imageSize: 'square_hd', imageCount: 2 }),
    ...overrides,
  };
}

export const unknownToken = () => randomUUID();

/** The request without `target_id`, to name the target by the legacy fields instead. */
export function withoutTargetId(request: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(request).filter(([key]) => key !== 'target_id'));
}

/** Requests an authorization as `agent` and admits one execution for it; the token and the admitted execution. */
export async function admitOne(ledger: TestLedger, agent: string, executor: TestExecutor): Promise<{ tokenId: string; execution: { execution_id: string; state: string } }> {
  const created = await call<{ authorization: { token_id: string } }>(ledger.url, 'POST', '/authorizations', {
    token: agent,
    body: { amount_units: '900000', units_scale: 6, currency: 'USD' },
  });
  const tokenId = created.body.authorization.token_id;
  const admitted = await call<{ execution: { execution_id: string; state: string } }>(executor.url, 'POST', '/v2/executions', {
    token: executor.caller,
    body: executionRequest(tokenId),
  });
  return { tokenId, execution: admitted.body.execution };
}

