import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { derivedTaskQueue, foreignPollers, INSTALLATION_ID, isOwnWorker, POLLER_FRESH_MS, workerIdentity } from '../../src/executor/domain/installation.js';
import { concludeRound, initialReadinessState, notReadyReason, observeEngine, observeLedger, READINESS_REASON_FIELDS } from '../../src/executor/domain/readiness-state.js';
import { createReadiness } from '../../src/executor/readiness.js';
import { createReadinessMonitor, type EngineSample } from '../../src/executor/readiness-monitor.js';
import { developmentRescheduleIntervalMs, RESCHEDULE_INTERVAL_ENV } from '../../src/executor/engine/development-reschedule-interval.js';
import { createInstallationStore } from '../../src/executor/store/installation-store.js';
import { EXECUTOR_MIGRATIONS } from '../../src/executor/store/migrations/executor-migrations.js';
import { rescheduledRunsCheck } from '../../src/launcher/doctor/doctor-checks.js';
import { probeHttp } from '../../src/process/loopback-probe.js';
import { countRescheduledRuns } from '../../src/launcher/status/executor-database.js';
import { openDatabase } from '../../src/storage/open-database.js';
import { makeTempDir, removeDir } from '../support/cli.js';
import { createFakeTime } from '../support/fake-time.js';

/*
 * Task-queue ownership (issue 24 item 1) and the count of rescheduled runs (item 2) in their pure
 * and local parts: who counts as another installation's poller, the `task_queue_shared` readiness
 * rule, the installation id the executor database keeps, and what `stack status` and
 * `stack doctor` read. The real-server behaviour is in test/executor/task-queue-ownership.test.ts.
 */

const OURS = 'a1b2c3d4e5f6';
const THEIRS = '0123456789ab';
const NOW = 1_800_000_000_000;

describe('installation identity', () => {
  it('derives a task queue and a worker identity that name the installation', () => {
    expect(derivedTaskQueue(OURS)).toBe('lexec-a1b2c3d4e5f6');
    const identity = workerIdentity(OURS, 'host-1', 4242, 'abcd1234');
    expect(identity).toBe('lexec-executor/a1b2c3d4e5f6@host-1:4242:abcd1234');
    expect(isOwnWorker(identity, OURS)).toBe(true);
    expect(isOwnWorker(identity, THEIRS)).toBe(false);
    // An installation id that merely starts like ours is another one.
    expect(isOwnWorker(workerIdentity(`${OURS.slice(0, 11)}0`, 'h', 1, 'x'), OURS)).toBe(false);
  });

  it('counts as foreign every fresh poller that is not this installation\'s, an earlier process of ours never', () => {
    const pollers = [
      { identity: workerIdentity(OURS, 'h', 1, 'now'), lastAccessMs: NOW },
      { identity: workerIdentity(OURS, 'h', 2, 'earlier'), lastAccessMs: NOW - 1_000 },
      { identity: workerIdentity(THEIRS, 'other-host', 3, 'x'), lastAccessMs: NOW - 50_000 },
      { identity: 'some-other-program@h', lastAccessMs: NOW - 10 },
    ];
    expect(foreignPollers(pollers, OURS).map((poller) => poller.identity)).toEqual([workerIdentity(THEIRS, 'other-host', 3, 'x'), 'some-other-program@h']);
  });

  it('counts a worker of a release before installation ids only once it polled again since first seen (it may be our own, from before the upgrade)', () => {
    const legacy = { identity: 'lexec-executor@h:5:old-format', lastAccessMs: NOW - 5_000 };
    const own = { identity: workerIdentity(OURS, 'h', 1, 'y'), lastAccessMs: NOW };
    expect(foreignPollers([own, legacy], OURS)).toEqual([]);
    const firstSeen = new Map([[legacy.identity, legacy.lastAccessMs]]);
    expect(foreignPollers([own, legacy], OURS, firstSeen)).toEqual([]);
    const polledAgain = { ...legacy, lastAccessMs: NOW - 100 };
    expect(foreignPollers([own, polledAgain], OURS, firstSeen)).toEqual([polledAgain]);
  });

  it('forgets a poller not seen for two minutes on the engine\'s own clock, whatever the local clock says', () => {
    const stale = { identity: workerIdentity(THEIRS, 'h', 3, 'x'), lastAccessMs: NOW - POLLER_FRESH_MS - 1 };
    const own = { identity: workerIdentity(OURS, 'h', 1, 'y'), lastAccessMs: NOW };
    expect(foreignPollers([own, stale], OURS)).toEqual([]);
    expect(foreignPollers([own, { ...stale, lastAccessMs: NOW - POLLER_FRESH_MS }], OURS)).toHaveLength(1);
    // Alone, it is the newest sighting: still polling as far as the engine knows.
    expect(foreignPollers([stale], OURS)).toHaveLength(1);
    expect(foreignPollers([{ identity: 'x', lastAccessMs: undefined }], OURS)).toHaveLength(1);
  });
});

describe('readiness: task_queue_shared', () => {
  const OWN_POLLER = { outcome: 'ok', pollers: 1 } as const;
  const SHARED = { outcome: 'ok', pollers: 1, foreignPollers: 1 } as const;

  it('is never established while another installation polls the queue, and names the field to fix', () => {
    let state = observeLedger(observeEngine(initialReadinessState(), SHARED, 0, 0), true, 0);
    state = concludeRound(state);
    expect(state.ready).toBe(false);
    expect(notReadyReason(state)).toBe('task_queue_shared');
    expect(READINESS_REASON_FIELDS.task_queue_shared).toBe('workflow_engine.task_queue');
    state = concludeRound(observeEngine(state, OWN_POLLER, 1, 1));
    expect(state.ready).toBe(true);
  });

  it('withdraws at once when a foreign poller appears, and restores at the end of a round without one', () => {
    let state = concludeRound(observeLedger(observeEngine(initialReadinessState(), OWN_POLLER, 0, 0), true, 0));
    expect(state.ready).toBe(true);
    state = observeEngine(state, SHARED, 1, 1);
    expect(state.ready).toBe(false);
    expect(notReadyReason(state)).toBe('task_queue_shared');
    // An engine error is said first; the shared queue again once the engine answers.
    expect(notReadyReason(observeEngine(state, { outcome: 'error' }, 2, 2))).toBe('workflow_engine_unavailable');
    state = concludeRound(observeEngine(state, OWN_POLLER, 3, 3));
    expect(state.ready).toBe(true);
  });

  it('the monitor withdraws with that reason and logs every shared sample as a warning with foreign_pollers', async () => {
    const time = createFakeTime();
    const readiness = createReadiness();
    let sample: EngineSample = { outcome: 'ok', pollers: 1 };
    const lines: { level: string; entry: Record<string, unknown> }[] = [];
    const monitor = createReadinessMonitor({
      clock: time.clock,
      timers: time.timers,
      readiness,
      logger: { info: (entry) => lines.push({ level: 'info', entry }), warn: (entry) => lines.push({ level: 'warn', entry }), error: (entry) => lines.push({ level: 'error', entry }) },
      engine: () => Promise.resolve(sample),
      ledger: () => Promise.resolve(),
    });
    void monitor.start();
    await time.settle();
    expect(readiness.isReady()).toBe(true);
    sample = { outcome: 'ok', pollers: 1, foreignPollers: 2 };
    await time.advance(5_000);
    expect(readiness.reason()).toBe('task_queue_shared');
    const shared = lines.filter((line) => line.entry.foreign_pollers !== undefined);
    expect(shared).toEqual([{ level: 'warn', entry: expect.objectContaining({ dependency: 'workflow_engine', outcome: 'ok', foreign_pollers: 2 }) as unknown }]);
    sample = { outcome: 'ok', pollers: 1 };
    await time.advance(5_000);
    expect(readiness.isReady()).toBe(true);
    monitor.stop();
  });

  it('`stack status` shows the reason with its field, as /readyz gives them', async () => {
    const server = http.createServer((_request, response) => {
      response.writeHead(503, { 'content-type': 'application/json' });
      response.end(JSON.stringify({ status: 'not_ready', reason: 'task_queue_shared', field: 'workflow_engine.task_queue' }));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const { port } = server.address() as AddressInfo;
      expect(await probeHttp(port, '/readyz', 2_000)).toEqual({ ok: false, error: 'HTTP 503 (task_queue_shared: workflow_engine.task_queue)' });
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });
});

describe('the executor database: installation id and rescheduled runs', () => {
  let dir = '';
  afterEach(async () => {
    if (dir !== '') await removeDir(dir);
    dir = '';
  });

  it('creates one installation id, keeps it across reopening, and the launcher counts the rescheduled runs it logs', async () => {
    dir = await makeTempDir('lexec-installation-');
    const path = join(dir, 'executor.db');
    const other = join(dir, 'other.db');
    const db = openDatabase(path, EXECUTOR_MIGRATIONS);
    const id = createInstallationStore(db).installationId();
    expect(id).toMatch(INSTALLATION_ID);
    db.close();
    const again = openDatabase(path, EXECUTOR_MIGRATIONS);
    expect(createInstallationStore(again).installationId()).toBe(id);
    const second = openDatabase(other, EXECUTOR_MIGRATIONS);
    expect(createInstallationStore(second).installationId()).not.toBe(id);
    second.close();

    expect(await countRescheduledRuns(path)).toEqual({ total: 0, last_24h: 0, last_at: null });
    again
      .prepare("INSERT INTO executions (execution_id, workflow_id, spend_auth_token_id, account_id, agent_id, target_id, request_json, pricing_snapshot, authorization_held_cents, currency, state, created_at, updated_at) VALUES ('exe_1', 'wf_1', 'tok_1', 'a', 'b', 't', '{}', '{}', 1, 'USD', 'running', 0, 0)")
      .run();
    let at = NOW - 2 * 86_400_000;
    const store = createInstallationStore(again, () => at);
    store.recordReschedule({ executionId: 'exe_1', previousStatus: 'TERMINATED', previousTaskQueue: 'lexec-x', taskQueue: 'lexec-x' });
    at = NOW - 60_000;
    store.recordReschedule({ executionId: 'exe_1', previousStatus: 'FAILED', previousTaskQueue: 'lexec-x', taskQueue: 'lexec-x' });
    again.close();
    expect(await countRescheduledRuns(path, NOW)).toEqual({ total: 2, last_24h: 1, last_at: new Date(NOW - 60_000).toISOString() });
    expect(await countRescheduledRuns(join(dir, 'absent.db'))).toBeNull();
  });

  it('doctor warns while a run was rescheduled in the last 24 h, and passes otherwise', () => {
    expect(rescheduledRunsCheck(null).status).toBe('skip');
    expect(rescheduledRunsCheck({ total: 0, last_24h: 0, last_at: null })).toMatchObject({ status: 'pass', summary: 'no workflow run had to be started again' });
    expect(rescheduledRunsCheck({ total: 3, last_24h: 0, last_at: '2026-01-01T00:00:00.000Z' }).status).toBe('pass');
    const recent = rescheduledRunsCheck({ total: 3, last_24h: 2, last_at: '2026-01-01T00:00:00.000Z' });
    expect(recent.status).toBe('warn');
    expect(recent.fix).toContain('workflow_rescheduled');
  });
});

describe('the rescheduler interval', () => {
  it('can be shortened only in a development build, within 200 ms … 30 s', () => {
    expect(developmentRescheduleIntervalMs('development', { [RESCHEDULE_INTERVAL_ENV]: '500' })).toBe(500);
    expect(developmentRescheduleIntervalMs('development', { [RESCHEDULE_INTERVAL_ENV]: '5' })).toBe(200);
    expect(developmentRescheduleIntervalMs('development', { [RESCHEDULE_INTERVAL_ENV]: 'soon' })).toBeUndefined();
    expect(developmentRescheduleIntervalMs('release', { [RESCHEDULE_INTERVAL_ENV]: '500' })).toBeUndefined();
    expect(developmentRescheduleIntervalMs('development', {})).toBeUndefined();
  });
});
