import type Database from 'better-sqlite3';
import { Gauge, Histogram, Registry } from 'prom-client';
import type { RunActivity } from './engine/workflow-engine.js';
import type { FalQueueClient } from './provider/fal-queue-client.js';
import type { Readiness } from './readiness.js';

/*
 * The executor's Prometheus metrics (docs/metrics.md): one registry per executor. What is state
 * (executions by state, parked ones, readiness) is read when a scraper asks, from the database
 * and the readiness the executor keeps; what is a duration (a phase's run, a provider call) is
 * observed as it happens, in this process, since the process started. No label carries an
 * execution id, a prompt or a URL: phases, states, provider operations and outcomes are fixed sets.
 */

/** Seconds, from a few milliseconds (a local sandbox) to minutes (a live provider's queue). */
const DURATION_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300];

export interface ExecutorMetrics {
  readonly registry: Registry;
  /** `run`, with each phase's duration and outcome observed. */
  timedActivity(run: RunActivity): RunActivity;
  /** `client`, with each call's latency and outcome observed (`media` is the artifact download). */
  timedProvider(client: FalQueueClient): FalQueueClient;
}

export interface ExecutorMetricsOptions {
  readonly db: Database.Database;
  readonly readiness: Readiness;
}

/** Executions by state: the ended ones from the counts executor migration 14 keeps, the running ones (few) from the state index — a scrape costs the same at any history. */
export const EXECUTIONS_BY_STATE_SQL = `
  SELECT state, SUM(count) AS count FROM (
    SELECT state, count FROM execution_counts
    UNION ALL
    SELECT state, 1 FROM executions WHERE state IN ('pending', 'scheduled', 'running')
  ) GROUP BY state HAVING SUM(count) > 0 ORDER BY state`;

const seconds = (startedNs: bigint) => Number(process.hrtime.bigint() - startedNs) / 1e9;

/** The executor's metrics: a new registry per executor, nothing global. */
export function createExecutorMetrics({ db, readiness }: ExecutorMetricsOptions): ExecutorMetrics {
  const registry = new Registry();
  const registers = [registry];
  const byState = db.prepare(EXECUTIONS_BY_STATE_SQL);
  const awaitingLedger = db.prepare("SELECT COUNT(*) FROM executions WHERE state = 'reconciliation' AND ledger_record_at IS NULL").pluck();

  new Gauge({
    name: 'lexec_executor_executions',
    help: 'Executions by state (pending, scheduled, running, succeeded, failed, reconciliation).',
    labelNames: ['state'],
    registers,
    collect() {
      this.reset();
      for (const row of byState.all() as { state: string; count: bigint }[]) this.set({ state: row.state }, Number(row.count));
    },
  });
  new Gauge({
    name: 'lexec_executor_parked_awaiting_ledger_record',
    help: 'Executions parked for reconciliation whose reconciliation record the ledger has not answered yet.',
    registers,
    collect() {
      this.set(Number(awaitingLedger.get()));
    },
  });
  new Gauge({
    name: 'lexec_executor_ready',
    help: '1 when the executor admits executions (GET /readyz answers ready), 0 otherwise.',
    registers,
    collect() {
      this.set(readiness.isReady() ? 1 : 0);
    },
  });
  const phases = new Histogram({
    name: 'lexec_executor_phase_duration_seconds',
    help: "How long one run of an execution's phase took, by phase and outcome (next, done, later, error), since the executor started.",
    labelNames: ['phase', 'outcome'],
    buckets: DURATION_BUCKETS,
    registers,
  });
  const provider = new Histogram({
    name: 'lexec_executor_provider_request_duration_seconds',
    help: 'Latency of calls to the image provider, by operation (submit, status, result, media) and outcome (ok, error), since the executor started.',
    labelNames: ['operation', 'outcome'],
    buckets: DURATION_BUCKETS,
    registers,
  });

  async function timed<T>(operation: string, call: () => Promise<T>): Promise<T> {
    const started = process.hrtime.bigint();
    try {
      const answer = await call();
      provider.observe({ operation, outcome: 'ok' }, seconds(started));
      return answer;
    } catch (error) {
      provider.observe({ operation, outcome: 'error' }, seconds(started));
      throw error;
    }
  }

  return {
    registry,
    timedActivity: (run) => async (executionId, phase) => {
      const started = process.hrtime.bigint();
      try {
        const outcome = await run(executionId, phase);
        phases.observe({ phase, outcome: outcome.kind }, seconds(started));
        return outcome;
      } catch (error) {
        phases.observe({ phase, outcome: 'error' }, seconds(started));
        throw error;
      }
    },
    timedProvider: (client) => ({
      ...client,
      submit: (model, input) => timed('submit', () => client.submit(model, input)),
      status: (operation) => timed('status', () => client.status(operation)),
      result: (operation) => timed('result', () => client.result(operation)),
      media: (url) => timed('media', () => client.media(url)),
    }),
  };
}
