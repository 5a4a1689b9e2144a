import { describe, expect, it } from 'vitest';
import { readBuildInfo } from '../../src/build-info.js';
import { generateCapability } from '../../src/credentials/capability.js';
import { UserError } from '../../src/errors.js';
import { grpcStatusName } from '../../src/executor/domain/grpc-status.js';
import { READINESS_GRACE_MS } from '../../src/executor/domain/readiness-state.js';
import { proveLedgerCompatible } from '../../src/executor/ledger-compatibility.js';
import { createLedgerGateway, LedgerUnavailable, type LedgerGateway } from '../../src/executor/ledger-gateway.js';
import { createReadiness } from '../../src/executor/readiness.js';
import { createReadinessMonitor, HEALTHY_PROBE_SUMMARY_MS, PROBE_TIMEOUT_MS } from '../../src/executor/readiness-monitor.js';
import { createFakeTime } from '../support/fake-time.js';
import { mintCredential, startTestLedger } from '../support/ledger.js';
import { CANCELLED, countingReadiness, EMPTY, harness, INTERVAL, OK, readyHarness, UNAVAILABLE } from '../support/readiness-monitor-harness.js';

/*
 * The readiness monitor against spec §3 rules 1–3, 7, 8 and 10, §6 and §8: startup, withdrawal
 * and restoration, the probe log, stopping and sampling on demand; one describe per rule. The
 * cancellation grace window and the probe intervals it bounds (rules 4, 5, 6, 9 and 11):
 * readiness-monitor-grace.test.ts. Time is a fake clock and timer port: nothing sleeps. The probes
 * are scripted answers (test/support/readiness-monitor-harness.ts); rule 3 also runs against a
 * real ledger on loopback with the real gateway and compatibility proof.
 */

describe('rule 1: startup needs a positive poller proof and a ledger compatibility proof', () => {
  it('stays withdrawn with only the engine proven and becomes ready in the round the ledger proof arrives', async () => {
    const h = harness();
    h.ledger.next(new Error('refused'), new Error('refused'));
    await h.start();
    expect(h.readiness.isReady()).toBe(false);
    expect(h.readiness.reason()).toBe('ledger_unavailable');
    await h.time.advance(INTERVAL);
    expect(h.readiness.isReady()).toBe(false);
    expect(h.startup()).toBeUndefined();
    await h.time.advance(INTERVAL);
    expect(h.readiness.isReady()).toBe(true);
    expect(h.startup()).toBe('ready');
    expect(h.events('executor_ready').map((line) => [line.at, line.entry.recovered])).toEqual([[h.t0 + 2 * INTERVAL, false]]);
  });

  it('does not count a reachable engine with no pollers as the startup proof', async () => {
    const h = harness();
    h.engine.always(EMPTY);
    await h.start();
    await h.time.advance(3 * INTERVAL);
    expect(h.readiness.isReady()).toBe(false);
    expect(h.readiness.reason()).toBe('workflow_engine_no_poller');
    h.engine.always({ outcome: 'ok', pollers: 2 });
    await h.time.advance(INTERVAL);
    expect(h.startup()).toBe('ready');
  });

  it('keeps probing both dependencies at the interval until both proofs exist', async () => {
    const h = harness();
    h.engine.always(UNAVAILABLE);
    h.ledger.always(new Error('down'));
    await h.start();
    await h.time.advance(30_000);
    const expected = Array.from({ length: 7 }, (_, index) => h.t0 + index * INTERVAL);
    expect(h.engine.calls.map((call) => call.at)).toEqual(expected);
    expect(h.ledger.calls.map((call) => call.at)).toEqual(expected);
    expect(h.readiness.isReady()).toBe(false);
  });

  it('returns the same startup from a second start() and samples once per round', async () => {
    const h = harness();
    const first = h.monitor.start();
    const second = h.monitor.start();
    expect(second).toBe(first);
    expect(await first).toBe('ready');
    expect(h.engine.calls).toHaveLength(1);
  });

  it('resolves start() with "stopped" when stopped before the proofs exist', async () => {
    const h = harness();
    h.ledger.always(new Error('down'));
    await h.start();
    h.monitor.stop();
    await h.time.settle();
    expect(h.startup()).toBe('stopped');
    expect(h.readiness.isReady()).toBe(false);
  });

  it('rejects start() with a ledger failure the caller marks fatal at startup, and stops probing', async () => {
    const incompatible = new UserError('ledger_version_mismatch', 'The ledger reports another version.', { nextStep: 'Fix it.' });
    const h = harness({ isFatalAtStartup: (error) => error instanceof UserError });
    h.ledger.always(incompatible);
    await h.start();
    expect(h.startup()).toEqual({ rejected: incompatible });
    expect(h.time.pending()).toBe(0);
    await h.time.advance(60_000);
    expect(h.engine.calls).toHaveLength(1);
    expect(h.readiness.isReady()).toBe(false);
  });
});

describe('rule 2: after startup a single failed probe does not stop the executor', () => {
  it('withdraws on one failed probe, keeps sampling and restores on the next healthy round', async () => {
    const h = await readyHarness();
    h.engine.next(UNAVAILABLE);
    await h.time.advance(INTERVAL);
    expect(h.readiness.isReady()).toBe(false);
    await h.time.advance(INTERVAL);
    expect(h.readiness.isReady()).toBe(true);
    expect(h.startup()).toBe('ready');
    expect(h.engine.calls).toHaveLength(3);
  });

  it('no longer treats a "fatal at startup" ledger failure as fatal once readiness was established', async () => {
    const h = await readyHarness({ isFatalAtStartup: () => true });
    h.ledger.next(new UserError('ledger_version_mismatch', 'Another version.', { nextStep: 'Fix it.' }));
    await h.time.advance(INTERVAL);
    expect(h.readiness.isReady()).toBe(false);
    expect(h.startup()).toBe('ready');
    await h.time.advance(INTERVAL);
    expect(h.readiness.isReady()).toBe(true);
  });
});

describe('rule 3: ledger probes include protected access with the loaded credential', () => {
  it('runs the ledger probe in every round, not only at startup', async () => {
    const h = await readyHarness();
    await h.time.advance(6 * INTERVAL);
    expect(h.ledger.calls.map((call) => call.at)).toEqual(Array.from({ length: 7 }, (_, index) => h.t0 + index * INTERVAL));
  });

  it('withdraws when a real ledger refuses the credential on its protected route while /version still answers', async () => {
    const ledger = await startTestLedger();
    const gateways: LedgerGateway[] = [];
    try {
      const registered = createLedgerGateway({ endpoint: ledger.url, credential: await mintCredential(ledger, 'executor') });
      const unknown = createLedgerGateway({ endpoint: ledger.url, credential: generateCapability('executor') });
      gateways.push(registered, unknown);
      let gateway = registered;
      const self = readBuildInfo();
      const h = harness({
        ledger: () => proveLedgerCompatible(gateway, { pinnedVersion: self.product_version, developmentAllowance: true, self }),
        ledgerFailureReason: (error) => (error instanceof UserError ? error.code : error instanceof LedgerUnavailable ? 'unavailable' : undefined),
      });
      expect(await h.monitor.start()).toBe('ready');

      gateway = unknown;
      const refused = h.logged((entry) => entry.dependency === 'ledger' && entry.outcome === 'error');
      await h.time.advance(INTERVAL);
      expect(await refused).toEqual({ event: 'executor_dependency_probe', dependency: 'ledger', outcome: 'error', consecutive_failures: 1, reason: 'ledger_credential_rejected' });
      await h.time.settle();
      expect(h.readiness.isReady()).toBe(false);
      expect(h.readiness.reason()).toBe('ledger_unavailable');
      expect((await unknown.version()).product_version).toBe(self.product_version);

      gateway = registered;
      const recovered = h.logged((entry) => entry.event === 'executor_ready');
      await h.time.advance(INTERVAL);
      expect(await recovered).toEqual({ event: 'executor_ready', recovered: true });
      expect(h.readiness.isReady()).toBe(true);
      h.monitor.stop();
    } finally {
      for (const gateway of gateways) gateway.close();
      await ledger.close();
    }
  });
});

describe('rule 7: a non-cancelled engine error or any ledger failure withdraws at once', () => {
  it('withdraws on an engine error while the same round\'s ledger probe is still out', async () => {
    const h = await readyHarness();
    h.engine.next(UNAVAILABLE);
    h.ledger.next({ after: 3_000, answer: 'ok' });
    await h.time.advance(INTERVAL);
    expect(h.ledger.calls).toHaveLength(2);
    expect(h.readiness.isReady()).toBe(false);
    expect(h.readiness.reason()).toBe('workflow_engine_unavailable');
  });

  it('withdraws on a ledger failure while the same round\'s engine RPC is still out', async () => {
    const h = await readyHarness();
    h.engine.next({ after: 3_000, answer: OK });
    h.ledger.next(new Error('refused'));
    await h.time.advance(INTERVAL);
    expect(h.readiness.isReady()).toBe(false);
    expect(h.readiness.reason()).toBe('ledger_unavailable');
  });

  it('gives an error no grace even inside a running cancellation window', async () => {
    const h = await readyHarness();
    h.engine.next(CANCELLED, CANCELLED, { outcome: 'error', code: 'INTERNAL' });
    await h.time.advance(INTERVAL);
    expect(h.readiness.isReady()).toBe(true);
    await h.time.advance(INTERVAL);
    expect(h.readiness.isReady()).toBe(false);
    expect(h.monitor.state().engine).toEqual({ health: 'error', consecutiveFailures: 2, windowStart: h.t0 + INTERVAL });
  });

  it('counts a ledger probe that does not answer within 10 s as a failure', async () => {
    const h = await readyHarness();
    h.ledger.next('hang');
    await h.time.advance(INTERVAL + PROBE_TIMEOUT_MS - 1);
    expect(h.readiness.isReady()).toBe(true);
    await h.time.advance(1);
    expect(h.events('executor_readiness_withdrawn').map((line) => [line.at, line.entry.reason])).toEqual([[h.t0 + INTERVAL + PROBE_TIMEOUT_MS, 'ledger_unavailable']]);
    expect(h.probes('ledger')[1]).toEqual({ event: 'executor_dependency_probe', dependency: 'ledger', outcome: 'error', consecutive_failures: 1, reason: 'timeout' });
  });

  it('treats an engine adapter that throws instead of answering as an error sample', async () => {
    const time = createFakeTime();
    const readiness = createReadiness();
    const monitor = createReadinessMonitor({
      clock: time.clock,
      timers: time.timers,
      readiness,
      logger: { info: () => undefined, warn: () => undefined, error: () => undefined },
      engine: () => {
        throw new Error('adapter bug at 10.0.0.7:7233');
      },
      ledger: () => Promise.resolve(),
    });
    void monitor.start();
    await time.settle();
    expect(monitor.state().engine).toEqual({ health: 'error', consecutiveFailures: 1, windowStart: time.clock.now() });
    expect(readiness.reason()).toBe('workflow_engine_unavailable');
    monitor.stop();
  });
});

describe('rule 8: a healthy sample restores only when all dependencies are healthy, and resets its window', () => {
  it('does not restore while the ledger still fails, and restores when both are healthy', async () => {
    const h = await readyHarness();
    h.engine.next(UNAVAILABLE);
    h.ledger.next(new Error('down'), new Error('down'));
    await h.time.advance(INTERVAL);
    await h.time.advance(INTERVAL);
    expect(h.readiness.isReady()).toBe(false);
    expect(h.readiness.reason()).toBe('ledger_unavailable');
    await h.time.advance(INTERVAL);
    expect(h.readiness.isReady()).toBe(true);
  });

  it('never restores, not even for a moment, when the engine recovers before the same round\'s ledger failure', async () => {
    const readiness = countingReadiness();
    const h = await readyHarness({ readiness });
    h.engine.next(UNAVAILABLE, OK);
    h.ledger.next('ok', { after: 1_000, answer: new Error('down') });
    await h.time.advance(2 * INTERVAL);
    expect(readiness.restorations()).toBe(1);
    expect(h.readiness.isReady()).toBe(false);
    await h.time.advance(INTERVAL);
    expect(readiness.restorations()).toBe(2);
  });

  it('resets the failure window: a later cancellation sequence gets its own 30 s', async () => {
    const h = await readyHarness();
    h.engine.next(CANCELLED, CANCELLED, CANCELLED, OK);
    h.engine.always(CANCELLED);
    await h.time.advance(3 * INTERVAL);
    const secondStart = h.t0 + 3 * INTERVAL;
    expect(h.monitor.state().engine.windowStart).toBe(secondStart);
    expect(h.probes('workflow_engine').map((entry) => entry.consecutive_failures)).toEqual([0, 1, 0, 1]);
    await h.time.advance(secondStart + 29_999 - h.time.clock.now());
    expect(h.readiness.isReady()).toBe(true);
    await h.time.advance(1);
    expect(h.readiness.isReady()).toBe(false);
  });

  it('resets the ledger window and count on a healthy ledger sample', async () => {
    const h = await readyHarness();
    h.ledger.next(new Error('down'), new Error('down'), 'ok', new Error('down'));
    await h.time.advance(4 * INTERVAL);
    expect(h.probes('ledger').map((entry) => entry.consecutive_failures)).toEqual([0, 1, 2, 0, 1]);
    expect(h.monitor.state().ledger.windowStart).toBe(h.t0 + 4 * INTERVAL);
  });
});

describe('rule 10: observations never terminate anything; probing continues and recovery is automatic', () => {
  it('keeps sampling through a five-minute outage of both dependencies and restores on recovery', async () => {
    const h = await readyHarness();
    h.engine.always({ outcome: 'error', code: 14 });
    h.ledger.always(new Error('down'));
    await h.time.advance(300_000);
    expect(h.engine.calls).toHaveLength(61);
    expect(h.probes('workflow_engine').at(-1)?.consecutive_failures).toBe(60);
    expect(h.readiness.isReady()).toBe(false);
    h.engine.always(OK);
    h.ledger.always('ok');
    await h.time.advance(INTERVAL);
    expect(h.readiness.isReady()).toBe(true);
    expect(h.startup()).toBe('ready');
  });

  it('goes on probing when the logger throws', async () => {
    const time = createFakeTime();
    let calls = 0;
    const monitor = createReadinessMonitor({
      clock: time.clock,
      timers: time.timers,
      readiness: createReadiness(),
      logger: {
        info: () => {
          throw new Error('log sink gone');
        },
        warn: () => {
          throw new Error('log sink gone');
        },
        error: () => {
          throw new Error('log sink gone');
        },
      },
      engine: () => {
        calls += 1;
        return Promise.resolve(OK);
      },
      ledger: () => Promise.resolve(),
    });
    void monitor.start();
    await time.advance(3 * INTERVAL);
    expect(calls).toBe(4);
    monitor.stop();
  });
});

describe('executor_dependency_probe (spec §6)', () => {
  it('writes one event per dependency with exactly the documented fields', async () => {
    const h = await readyHarness();
    expect(h.lines.map((line) => [line.level, line.entry])).toEqual(
      expect.arrayContaining([
        ['info', { event: 'executor_dependency_probe', dependency: 'workflow_engine', outcome: 'ok', consecutive_failures: 0, pollers: 1 }],
        ['info', { event: 'executor_dependency_probe', dependency: 'ledger', outcome: 'ok', consecutive_failures: 0 }],
      ]),
    );
    expect(h.lines.at(-1)?.entry).toEqual({ event: 'executor_ready', recovered: false });
    expect(h.lines).toHaveLength(3);
  });

  it('does not flood the log with healthy samples: a line on a change of outcome, then a summary every 5 minutes', async () => {
    const h = await readyHarness();
    const healthy = () => h.probes('ledger').filter((entry) => entry.outcome === 'ok');
    await h.time.advance(10 * INTERVAL);
    expect(healthy()).toHaveLength(1); // the first one only
    h.ledger.next(new Error('down'));
    await h.time.advance(INTERVAL);
    expect(h.probes('ledger').at(-1)).toMatchObject({ outcome: 'error', consecutive_failures: 1 });
    await h.time.advance(INTERVAL);
    expect(healthy()).toHaveLength(2); // healthy again: a change, logged at once
    expect(healthy()[1]).not.toHaveProperty('healthy_samples');
    const samples = HEALTHY_PROBE_SUMMARY_MS / INTERVAL;
    await h.time.advance(HEALTHY_PROBE_SUMMARY_MS);
    expect(healthy()).toHaveLength(3);
    expect(healthy()[2]).toMatchObject({ outcome: 'ok', healthy_samples: samples });
  });

  it('a healthy sample that says something new (the engine\'s pollers) gets its own line', async () => {
    const h = await readyHarness();
    h.engine.next({ outcome: 'ok', pollers: 0 }, { outcome: 'ok', pollers: 0 });
    await h.time.advance(3 * INTERVAL);
    expect(h.probes('workflow_engine').map((entry) => entry.pollers)).toEqual([1, 0, 1]);
  });

  it('writes one event, and adds one to the count, for the two RPCs of a confirmation', async () => {
    const h = await readyHarness();
    h.engine.always(CANCELLED);
    await h.time.advance(3 * INTERVAL);
    expect(h.engine.calls).toHaveLength(7);
    expect(h.probes('workflow_engine').slice(1)).toEqual(
      [1, 2, 3].map((count) => ({
        event: 'executor_dependency_probe',
        dependency: 'workflow_engine',
        outcome: 'cancelled',
        consecutive_failures: count,
        grpc_status: 'CANCELLED',
        confirmation: 'cancelled',
      })),
    );
  });

  it('logs only a canonical gRPC status name, never a message or address', async () => {
    const h = await readyHarness();
    h.engine.next({ outcome: 'error', code: 14 }, { outcome: 'error', code: 'unavailable' }, { outcome: 'error', code: 'connect ECONNREFUSED 10.1.2.3:7233' }, { outcome: 'error' });
    await h.time.advance(4 * INTERVAL);
    const failures = h.probes('workflow_engine').slice(1);
    expect(failures.map((entry) => entry.grpc_status)).toEqual(['UNAVAILABLE', 'UNAVAILABLE', undefined, undefined]);
    expect(failures.map((entry) => Object.keys(entry).sort().join(','))).toEqual([
      'consecutive_failures,dependency,event,grpc_status,outcome',
      'consecutive_failures,dependency,event,grpc_status,outcome',
      'consecutive_failures,dependency,event,outcome',
      'consecutive_failures,dependency,event,outcome',
    ]);
    expect(JSON.stringify(h.lines)).not.toContain('10.1.2.3');
  });

  it('logs a ledger failure reason only when it is a safe token, never the error text', async () => {
    const h = await readyHarness({ ledgerFailureReason: (error) => (error instanceof Error ? error.message : undefined) });
    h.ledger.next(new Error('ledger_credential_rejected'), new Error('token lexec_executor_SECRET refused by http://10.9.9.9:7400'));
    await h.time.advance(2 * INTERVAL);
    expect(h.probes('ledger').slice(1)).toEqual([
      { event: 'executor_dependency_probe', dependency: 'ledger', outcome: 'error', consecutive_failures: 1, reason: 'ledger_credential_rejected' },
      { event: 'executor_dependency_probe', dependency: 'ledger', outcome: 'error', consecutive_failures: 2 },
    ]);
    expect(JSON.stringify(h.lines)).not.toMatch(/SECRET|10\.9\.9\.9/);
  });

  it('names gRPC statuses by number or name and drops everything else', () => {
    expect(grpcStatusName(1)).toBe('CANCELLED');
    expect(grpcStatusName(16)).toBe('UNAUTHENTICATED');
    expect(grpcStatusName('Deadline_Exceeded')).toBe('DEADLINE_EXCEEDED');
    expect(grpcStatusName(17)).toBeUndefined();
    expect(grpcStatusName(-1)).toBeUndefined();
    expect(grpcStatusName(1.5)).toBeUndefined();
    expect(grpcStatusName('14 UNAVAILABLE: No connection established')).toBeUndefined();
    expect(grpcStatusName(undefined)).toBeUndefined();
  });
});

describe('stop()', () => {
  it('leaves no timer behind between rounds and samples nothing afterwards', async () => {
    const h = await readyHarness();
    expect(h.time.pending()).toBe(1);
    h.monitor.stop();
    expect(h.time.pending()).toBe(0);
    await h.time.advance(60_000);
    expect(h.engine.calls).toHaveLength(1);
  });

  it('clears the grace timer and the bounds of probes in flight, and ignores their late answers', async () => {
    const h = await readyHarness();
    h.engine.next(CANCELLED, CANCELLED, 'manual');
    h.ledger.next('ok', 'manual');
    await h.time.advance(2 * INTERVAL);
    expect(h.time.pendingDelays()).toEqual([PROBE_TIMEOUT_MS, PROBE_TIMEOUT_MS, READINESS_GRACE_MS - INTERVAL]);
    const logged = h.lines.length;
    h.monitor.stop();
    expect(h.time.pending()).toBe(0);
    h.engine.release({ outcome: 'error', code: 'UNAVAILABLE' });
    h.ledger.release(new Error('down'));
    await h.time.advance(60_000);
    expect(h.lines).toHaveLength(logged);
    expect(h.readiness.isReady()).toBe(true);
    expect(h.engine.calls).toHaveLength(4);
  });

  it('makes a later start() resolve "stopped" without sampling', async () => {
    const h = harness();
    h.monitor.stop();
    expect(await h.monitor.start()).toBe('stopped');
    expect(h.engine.calls).toHaveLength(0);
    expect(h.time.pending()).toBe(0);
  });
});

describe('startupIntervalMs and sampleNow()', () => {
  it('samples at the startup interval until first ready, then at the interval', async () => {
    const h = harness({ startupIntervalMs: 250 });
    h.engine.next(EMPTY, EMPTY);
    await h.start();
    await h.time.advance(250);
    expect(h.readiness.isReady()).toBe(false);
    await h.time.advance(250);
    expect(h.readiness.isReady()).toBe(true);
    expect(h.engine.calls.map((call) => call.at - h.t0)).toEqual([0, 250, 500]);
    await h.time.advance(INTERVAL - 1);
    expect(h.engine.calls).toHaveLength(3);
    await h.time.advance(1);
    expect(h.engine.calls).toHaveLength(4);
  });

  it('sampleNow() runs a round at once: an engine error withdraws without waiting for the interval, and the next healthy round restores', async () => {
    const h = await readyHarness();
    h.engine.next(UNAVAILABLE);
    await h.time.advance(1_000);
    h.monitor.sampleNow();
    await h.time.settle();
    expect(h.readiness.isReady()).toBe(false);
    expect(h.engine.calls.map((call) => call.at - h.t0)).toEqual([0, 1_000]);
    h.monitor.sampleNow();
    await h.time.settle();
    expect(h.readiness.isReady()).toBe(true);
    // The regular rhythm goes on from the last round, one timer only.
    expect(h.time.pending()).toBe(1);
  });

  it('sampleNow() during a round runs one more round right after it, never two at once', async () => {
    const h = await readyHarness();
    h.engine.next('manual');
    await h.time.advance(INTERVAL);
    h.monitor.sampleNow();
    h.monitor.sampleNow();
    expect(h.engine.calls).toHaveLength(2);
    h.engine.release(UNAVAILABLE);
    await h.time.settle();
    expect(h.readiness.isReady()).toBe(false);
    expect(h.engine.calls).toHaveLength(2);
    await h.time.advance(0);
    expect(h.engine.calls.map((call) => call.at - h.t0)).toEqual([0, INTERVAL, INTERVAL]);
    expect(h.readiness.isReady()).toBe(true);
  });
});

describe('a full disk (issue 26): sampled every round, withdraws at once, said once', () => {
  it('withdraws with disk_full naming the directory, logs one error however many rounds it lasts, and restores once there is room', async () => {
    let full: { path: string; availableBytes: number } | null = null;
    const h = await readyHarness({ disk: () => Promise.resolve(full) });
    full = { path: '/srv/lexec/state', availableBytes: 4096 };
    await h.time.advance(INTERVAL);
    expect(h.readiness.isReady()).toBe(false);
    expect(h.readiness.reason()).toBe('disk_full');
    expect(h.readiness.path()).toBe('/srv/lexec/state');
    await h.time.advance(10 * INTERVAL);
    const said = h.events('executor_disk_full');
    expect(said).toHaveLength(1);
    expect(said[0]?.level).toBe('error');
    expect(said[0]?.entry).toMatchObject({ reason: 'disk_full', path: '/srv/lexec/state', available_bytes: 4096 });
    expect(h.readiness.isReady()).toBe(false);
    full = null;
    await h.time.advance(INTERVAL);
    expect(h.readiness.isReady()).toBe(true);
    expect(h.readiness.path()).toBeUndefined();
    expect(h.events('executor_disk_space_recovered')).toHaveLength(1);
  });

  it('a full disk at startup is the reason shown, before the engine and the ledger', async () => {
    const h = harness({ disk: () => Promise.resolve({ path: '/srv/lexec/state', availableBytes: 0 }) });
    h.ledger.always(new Error('down'));
    await h.start();
    expect(h.readiness.reason()).toBe('disk_full');
    expect(h.startup()).toBeUndefined();
  });
});
