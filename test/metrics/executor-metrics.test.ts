import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createExecutorMetrics } from '../../src/executor/executor-metrics.js';
import { createReadiness } from '../../src/executor/readiness.js';
import type { FalQueueClient } from '../../src/executor/provider/fal-queue-client.js';
import { EXECUTOR_MIGRATIONS } from '../../src/executor/store/migrations/executor-migrations.js';
import { openDatabase } from '../../src/storage/open-database.js';
import { makeTempDir, removeDir } from '../support/cli.js';
import { admitOne, startTestExecutor, type TestExecutor } from '../support/executor.js';
import { call, setUpActors, startTestLedger, type Actors, type TestLedger } from '../support/ledger.js';
import { histogramCounts, parseScrape, samples, scrape, typeOf } from '../support/prometheus.js';

/*
 * `GET /metrics` on a real executor (its composition root, a real SQLite file, a real ledger over
 * loopback): executions by state and parked ones as its database holds them, readiness, and the
 * duration histograms; only for a loopback caller with the metrics capability, and only when one
 * is configured.
 */

let ledger: TestLedger;
let actors: Actors;
let executor: TestExecutor;
const ids: string[] = [];

beforeAll(async () => {
  ledger = await startTestLedger();
  actors = await setUpActors(ledger);
  executor = await startTestExecutor(ledger, { metrics: true });
  for (let index = 0; index < 5; index += 1) {
    const { tokenId, execution } = await admitOne(ledger, actors.agent, executor);
    ids.push(tokenId, execution.execution_id);
  }
  const [, first, , second, , third, , fourth] = ids;
  executor.store.setRunning(first ?? '', 'submit_provider');
  executor.store.setFinal(second ?? '', 'succeeded', null);
  executor.store.setFinal(third ?? '', 'failed', 'provider_failed');
  executor.store.park(fourth ?? '', 'billing_ambiguous', { attempt: 1 });
});

afterAll(async () => {
  await executor.close();
  await ledger.close();
});

const metrics = () => executor.metrics ?? '';

describe('the executor /metrics', () => {
  it('reports executions by state and the parked ones awaiting the ledger as the database holds them', async () => {
    const answer = await scrape(executor.url, metrics());
    expect(answer.status).toBe(200);
    const families = parseScrape(answer.body);
    const rows = executor.query<{ state: string; count: bigint }>('SELECT state, COUNT(*) AS count FROM executions GROUP BY state');
    expect(typeOf(families, 'lexec_executor_executions')).toBe('GAUGE');
    expect(samples(families, 'lexec_executor_executions')).toEqual(Object.fromEntries(rows.map((row) => [`state=${row.state}`, Number(row.count)])));
    expect(samples(families, 'lexec_executor_executions')).toEqual({ 'state=failed': 1, 'state=reconciliation': 1, 'state=running': 1, 'state=scheduled': 1, 'state=succeeded': 1 });
    expect(samples(families, 'lexec_executor_parked_awaiting_ledger_record')).toEqual({ '': 1 });
    expect(samples(families, 'lexec_executor_ready')).toEqual({ '': 1 });
    expect(typeOf(families, 'lexec_executor_phase_duration_seconds')).toBe('HISTOGRAM');
    expect(typeOf(families, 'lexec_executor_provider_request_duration_seconds')).toBe('HISTOGRAM');
  });

  it('says 0 for readiness while the executor is not ready', async () => {
    executor.readiness.withdraw('ledger_unavailable');
    try {
      expect(samples(parseScrape((await scrape(executor.url, metrics())).body), 'lexec_executor_ready')).toEqual({ '': 0 });
    } finally {
      executor.readiness.restore();
    }
  });

  it('carries no capability, no prompt, no URL and no execution or authorization id', async () => {
    const { body } = await scrape(executor.url, metrics());
    for (const secret of [metrics(), executor.caller, executor.reconciliation, executor.ledgerCredential, actors.agent]) expect(body).not.toContain(secret);
    expect(body).not.toContain('lighthouse');
    expect(body).not.toMatch(/https?:\/\//);
    for (const id of ids) expect(body).not.toContain(id);
  });

  it('answers 401 without a capability and to the caller and reconciliation ones; the metrics capability reads nothing else', async () => {
    expect((await scrape(executor.url)).status).toBe(401);
    expect((await scrape(executor.url, executor.caller)).status).toBe(401);
    expect((await scrape(executor.url, executor.reconciliation)).status).toBe(401);
    expect((await call(executor.url, 'GET', '/v1/executions', { token: metrics() })).status).toBe(401);
    expect((await call(executor.url, 'GET', `/v1/executions/${ids[1] ?? ''}`, { token: metrics() })).status).toBe(401);
    expect((await call(executor.url, 'GET', '/v2/execution-targets', { token: metrics() })).status).toBe(401);
    expect((await call(executor.url, 'GET', '/v1/reconciliation/executions', { token: metrics() })).status).toBe(401);
  });

  it('refuses a scrape from a remote address that is not loopback (403 metrics_loopback_only)', async () => {
    const refused = await executor.app.inject({ method: 'GET', url: '/metrics', remoteAddress: '198.51.100.7', headers: { authorization: `Bearer ${metrics()}` } });
    expect(refused.statusCode).toBe(403);
    expect(refused.json()).toEqual({ error: { code: 'forbidden', reason_code: 'metrics_loopback_only' } });
  });

  it('has no metrics route when no metrics capability is configured', async () => {
    const plain = await startTestExecutor(ledger);
    try {
      expect((await scrape(plain.url, metrics())).status).toBe(404);
    } finally {
      await plain.close();
    }
  });
});

/** A provider client whose submit answers and whose media download fails, as the wrappers see them. */
const providerAnswering = {
  submit: () => Promise.resolve({ requestId: 'r', statusUrl: '', responseUrl: '', cancelUrl: '', operationId: 'r' }),
  status: () => Promise.reject(new Error('unused')),
  result: () => Promise.reject(new Error('unused')),
  media: () => Promise.reject(new Error('refused')),
  close: () => undefined,
} as unknown as FalQueueClient;

describe('the executor duration histograms', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await makeTempDir('lexec-executor-metrics-');
  });
  afterAll(async () => {
    await removeDir(dir);
  });

  it('observe each phase run and provider call by phase or operation and outcome', async () => {
    const db = openDatabase(join(dir, 'executor.db'), EXECUTOR_MIGRATIONS);
    try {
      const metrics = createExecutorMetrics({ db, readiness: createReadiness() });
      const run = metrics.timedActivity((_executionId, phase) => (phase === 'settle' ? Promise.reject(new Error('ledger away')) : Promise.resolve({ kind: 'done' as const })));
      await run('exe_1', 'submit_provider');
      await run('exe_2', 'submit_provider');
      await expect(run('exe_3', 'settle')).rejects.toThrow('ledger away');
      await metrics.timedProvider(providerAnswering).submit('fal-ai/flux/schnell', { prompt: 'p', image_size: 'square_hd', num_images: 1 });
      await expect(metrics.timedProvider(providerAnswering).media('http://127.0.0.1:1/none')).rejects.toThrow('refused');
      const body = await metrics.registry.metrics();
      expect(histogramCounts(body, 'lexec_executor_phase_duration_seconds')).toEqual({ 'outcome=done,phase=submit_provider': 2, 'outcome=error,phase=settle': 1 });
      expect(histogramCounts(body, 'lexec_executor_provider_request_duration_seconds')).toEqual({ 'operation=submit,outcome=ok': 1, 'operation=media,outcome=error': 1 });
      expect(body).not.toContain('127.0.0.1');
    } finally {
      db.close();
    }
  });
});
