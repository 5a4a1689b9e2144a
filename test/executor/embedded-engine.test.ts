import { join } from 'node:path';
import type Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { backoffMs, createEmbeddedEngine, type ActivityOutcome, type EmbeddedEngine } from '../../src/executor/engine/embedded-engine.js';
import type { ExecutionPhase } from '../../src/executor/domain/execution-states.js';
import { executionIdFor, workflowIdFor } from '../../src/executor/domain/execution-states.js';
import { EXECUTOR_MIGRATIONS } from '../../src/executor/store/migrations/executor-migrations.js';
import { openDatabase } from '../../src/storage/open-database.js';
import { makeTempDir, removeDir } from '../support/cli.js';
import { createFakeTime } from '../support/fake-time.js';

let dir: string;
let db: Database.Database;
const engines: EmbeddedEngine[] = [];

beforeEach(async () => {
  dir = await makeTempDir('lexec-engine-');
  db = openDatabase(join(dir, 'executor.db'), EXECUTOR_MIGRATIONS);
});

afterEach(async () => {
  for (const engine of engines.splice(0)) await engine.drain(1_000);
  db.close();
  await removeDir(dir);
});

/** An execution row to hang runs on; returns its id. */
function execution(n: number): string {
  const id = executionIdFor(`token-${n}`);
  db.prepare(
    `INSERT INTO executions (execution_id, workflow_id, spend_auth_token_id, account_id, agent_id, target_id, request_json, pricing_snapshot,
       authorization_held_cents, authorization_held_units, units_scale, currency, state, created_at, updated_at)
     VALUES (?, ?, ?, 'a', 'b', 't', '{}', '{}', 1, 10000, 6, 'USD', 'scheduled', 1, 1)`,
  ).run(id, workflowIdFor(id), `token-${n}`);
  return id;
}

function engine(runActivity: (id: string, phase: ExecutionPhase) => Promise<ActivityOutcome>, extra: Partial<Parameters<typeof createEmbeddedEngine>[0]> = {}) {
  const created = createEmbeddedEngine({ db, runActivity, idleWakeMs: 10, ...extra });
  engines.push(created);
  return created;
}

async function until(check: () => boolean, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error('condition not reached');
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

const runRow = (id: string) => db.prepare('SELECT * FROM workflow_runs WHERE execution_id = ?').get(id) as Record<string, unknown>;

describe('embedded engine', () => {
  it('keeps one run per stable workflow id whose payload is only the execution id and phase', async () => {
    const id = execution(1);
    const worker = engine(() => Promise.resolve({ kind: 'done' }));
    await worker.schedule(id, workflowIdFor(id));
    await worker.schedule(id, workflowIdFor(id));
    expect(db.prepare('SELECT COUNT(*) AS n FROM workflow_runs').get()).toEqual({ n: 1n });
    const columns = (db.prepare('PRAGMA table_info(workflow_runs)').all() as { name: string }[]).map((column) => column.name);
    expect(columns).toEqual([
      'workflow_id',
      'execution_id',
      'phase',
      'status',
      'attempt',
      'available_at',
      'lease_owner',
      'lease_expires_at',
      'last_error_code',
      'created_at',
      'updated_at',
    ]);
    expect(runRow(id)).toMatchObject({ workflow_id: workflowIdFor(id), execution_id: id, phase: 'submit_provider', status: 'queued' });
  });

  it('runs the phases in order to completion', async () => {
    const id = execution(1);
    const seen: ExecutionPhase[] = [];
    const order: Record<string, ActivityOutcome> = {
      submit_provider: { kind: 'next', phase: 'poll_provider_operation' },
      poll_provider_operation: { kind: 'next', phase: 'store_artifacts' },
      store_artifacts: { kind: 'next', phase: 'settle' },
      settle: { kind: 'done' },
    };
    const worker = engine((_id, phase) => {
      seen.push(phase);
      return Promise.resolve(order[phase] ?? { kind: 'done' });
    });
    worker.start();
    await worker.schedule(id, workflowIdFor(id));
    await until(() => runRow(id).status === 'completed');
    expect(seen).toEqual(['submit_provider', 'poll_provider_operation', 'store_artifacts', 'settle']);
    expect(worker.pollers()).toBe(1);
  });

  it('retries a failing activity with backoff, then carries on', async () => {
    const id = execution(1);
    let offset = 0;
    let calls = 0;
    const worker = engine(
      () => {
        calls += 1;
        if (calls === 1) return Promise.reject(new TypeError('boom'));
        return Promise.resolve({ kind: 'done' });
      },
      { now: () => Date.now() + offset },
    );
    worker.start();
    await worker.schedule(id, workflowIdFor(id));
    await until(() => runRow(id).last_error_code === 'TypeError');
    const row = runRow(id);
    expect(row.status).toBe('queued');
    expect(Number(row.available_at) - Date.now()).toBeGreaterThan(500);
    offset = backoffMs(1) + 10;
    await until(() => runRow(id).status === 'completed');
    expect(calls).toBe(2);
  });

  it('an execution under way keeps its place: its next phase runs before a newer execution starts', async () => {
    const first = execution(1);
    const second = execution(2);
    const calls: string[] = [];
    const worker = engine(
      (id, phase) => {
        calls.push(`${id === first ? 'first' : 'second'}:${phase}`);
        return Promise.resolve(phase === 'submit_provider' ? { kind: 'next', phase: 'poll_provider_operation' } : { kind: 'done' });
      },
      { concurrency: 1 },
    );
    await worker.schedule(first, workflowIdFor(first));
    await new Promise((resolve) => setTimeout(resolve, 5));
    await worker.schedule(second, workflowIdFor(second));
    worker.start();
    await until(() => runRow(second).status === 'completed' && runRow(first).status === 'completed');
    expect(calls).toEqual(['first:submit_provider', 'first:poll_provider_operation', 'second:submit_provider', 'second:poll_provider_operation']);
  });

  it('a "later" outcome re-runs the same phase after the delay', async () => {
    const id = execution(1);
    let polls = 0;
    const worker = engine(() => {
      polls += 1;
      return Promise.resolve(polls < 3 ? { kind: 'later', delayMs: 20 } : { kind: 'done' });
    });
    worker.start();
    await worker.schedule(id, workflowIdFor(id));
    await until(() => runRow(id).status === 'completed');
    expect(polls).toBe(3);
  });

  it('a leased run has one owner: a polling peer never runs it while the lease holds', async () => {
    const id = execution(1);
    let release: () => void = () => undefined;
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    const calls: string[] = [];
    const first = engine(async () => {
      calls.push('first');
      await gate;
      return { kind: 'done' };
    });
    const second = engine(() => {
      calls.push('second');
      return Promise.resolve({ kind: 'done' });
    });
    // Both workers are up and polling before the run exists.
    first.start();
    second.start();
    await first.schedule(id, workflowIdFor(id));
    await until(() => calls.length === 1);
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(calls).toHaveLength(1);
    release();
    await until(() => runRow(id).status === 'completed');
    expect(calls).toHaveLength(1);
  });

  it('on start takes over runs a previous process left leased', async () => {
    const id = execution(1);
    db.prepare(
      "INSERT INTO workflow_runs (workflow_id, execution_id, phase, status, attempt, available_at, lease_owner, lease_expires_at, created_at, updated_at) VALUES (?, ?, 'poll_provider_operation', 'running', 1, 0, 'worker_dead', ?, 0, 0)",
    ).run(workflowIdFor(id), id, Date.now() + 600_000);
    const phases: ExecutionPhase[] = [];
    const worker = engine((_id, phase) => {
      phases.push(phase);
      return Promise.resolve({ kind: 'done' });
    });
    worker.start();
    await until(() => runRow(id).status === 'completed');
    expect(phases).toEqual(['poll_provider_operation']);
  });

  it('drains within a bound and then has no poller', async () => {
    const id = execution(1);
    const worker = engine(() => new Promise<ActivityOutcome>((resolve) => setTimeout(() => { resolve({ kind: 'done' }); }, 300)));
    worker.start();
    await worker.schedule(id, workflowIdFor(id));
    await until(() => runRow(id).status === 'running');
    expect(await worker.drain(20)).toEqual({ drained: false, inFlight: 1 });
    expect(worker.pollers()).toBe(0);
    expect(await worker.drain(1_000)).toEqual({ drained: true, inFlight: 0 });
  });

  describe('event-driven: woken by events, one timer for the next due run (a fake clock: nothing waits for real time)', () => {
    function fakeEngine(runActivity: (id: string, phase: ExecutionPhase) => Promise<ActivityOutcome>) {
      const time = createFakeTime();
      const worker = engine(runActivity, { now: () => time.clock.now(), timers: time.timers, idleWakeMs: 60_000 });
      return { time, worker };
    }

    it('with nothing due the worker sleeps the idle bound; a schedule wakes it at once, no timer firing', async () => {
      const ran: string[] = [];
      const { time, worker } = fakeEngine((id, phase) => {
        ran.push(`${id}:${phase}`);
        return Promise.resolve({ kind: 'done' });
      });
      worker.start();
      expect(time.pendingDelays()).toEqual([60_000]);
      const id = execution(1);
      await worker.schedule(id, workflowIdFor(id));
      await time.settle();
      expect(ran).toEqual([`${id}:submit_provider`]);
      expect(time.pendingDelays()).toEqual([60_000]);
    });

    it('a finished phase wakes the worker for the next one at once', async () => {
      const ran: ExecutionPhase[] = [];
      const next: Record<string, ActivityOutcome> = { submit_provider: { kind: 'next', phase: 'poll_provider_operation' }, poll_provider_operation: { kind: 'next', phase: 'settle' } };
      const { time, worker } = fakeEngine((_id, phase) => {
        ran.push(phase);
        return Promise.resolve(next[phase] ?? { kind: 'done' });
      });
      worker.start();
      const id = execution(2);
      await worker.schedule(id, workflowIdFor(id));
      await time.settle();
      expect(ran).toEqual(['submit_provider', 'poll_provider_operation', 'settle']);
      expect(runRow(id).status).toBe('completed');
    });

    it('a "later" arms one timer for exactly when the run falls due, and the run waits for it', async () => {
      let calls = 0;
      const { time, worker } = fakeEngine(() => {
        calls += 1;
        return Promise.resolve(calls === 1 ? { kind: 'later', delayMs: 1_500 } : { kind: 'done' });
      });
      worker.start();
      const id = execution(3);
      await worker.schedule(id, workflowIdFor(id));
      await time.settle();
      expect(calls).toBe(1);
      expect(time.pendingDelays()).toEqual([1_500]);
      await time.advance(1_499);
      expect(calls).toBe(1);
      await time.advance(1);
      expect(calls).toBe(2);
      expect(runRow(id).status).toBe('completed');
      expect(time.pendingDelays()).toEqual([60_000]);
    });
  });
});

