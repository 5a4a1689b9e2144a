import { describe, expect, it } from 'vitest';
import { readBuildInfo } from '../../src/build-info.js';
import { generateCapability } from '../../src/credentials/capability.js';
import { UserError } from '../../src/errors.js';
import { grpcStatusName } from '../../src/executor/domain/grpc-status.js';
import {
  DEFAULT_PROBE_INTERVAL_MS,
  initialReadinessState,
  MIN_PROBE_INTERVAL_MS,
  observeEngine,
  probeIntervalMs,
  READINESS_GRACE_MS,
  type ReadinessState,
} from '../../src/executor/domain/readiness-state.js';
import { proveLedgerCompatible } from '../../src/executor/ledger-compatibility.js';
import { createLedgerGateway, LedgerUnavailable, type LedgerGateway } from '../../src/executor/ledger-gateway.js';
import { createReadiness, type Readiness } from '../../src/executor/readiness.js';
import {
  CANCELLATION_CONFIRMATION_TIMEOUT_MS,
  createReadinessMonitor,
  HEALTHY_PROBE_SUMMARY_MS,
  PROBE_TIMEOUT_MS,
  type EngineSample,
  type ReadinessMonitorDependencies,
  type StartupOutcome,
} from '../../src/executor/readiness-monitor.js';
import { createFakeTime, type FakeTime } from '../support/fake-time.js';
import { mintCredential, startTestLedger } from '../support/ledger.js';

/*
 * The readiness monitor against spec §3 rules 1–11, §6 and §8, one describe per rule. Time is a
 * fake clock and timer port: nothing sleeps. The probes are scripted answers; rule 3 also runs
 * against a real ledger on loopback with the real gateway and compatibility proof.
 */

const OK: EngineSample = { outcome: 'ok', pollers: 1 };
const EMPTY: EngineSample = { outcome: 'ok', pollers: 0 };
const CANCELLED: EngineSample = { outcome: 'cancelled' };
const UNAVAILABLE: EngineSample = { outcome: 'error', code: 'UNAVAILABLE' };
const INTERVAL = DEFAULT_PROBE_INTERVAL_MS;

/** A scripted answer: now, after a delay on the fake clock, never, or when the test releases it. */
type Answer<T> = T | { readonly after: number; readonly answer: T } | 'hang' | 'manual';

interface Scripted<T> {
  readonly calls: { readonly at: number; readonly timeoutMs?: number }[];
  /** Answers for the next calls, in order; then the standing answer. */
  next(...answers: Answer<T>[]): void;
  /** The standing answer, given once the queued ones are used up. */
  always(answer: Answer<T>): void;
  /** Answers the oldest call scripted as 'manual'. */
  release(answer: T): void;
}

/** Engine answers are samples; ledger answers are 'ok' or the error it throws. */
function scripted<T>(time: FakeTime, initial: Answer<T>, deliver: (answer: T) => Promise<unknown>) {
  const queue: Answer<T>[] = [];
  let standing = initial;
  const held: ((answer: T) => void)[] = [];
  const calls: { at: number; timeoutMs?: number }[] = [];
  const control: Scripted<T> = {
    calls,
    next: (...answers) => queue.push(...answers),
    always(answer) {
      standing = answer;
    },
    release(answer) {
      held.shift()?.(answer);
    },
  };
  const call = (timeoutMs?: number): Promise<unknown> => {
    calls.push({ at: time.clock.now(), ...(timeoutMs === undefined ? {} : { timeoutMs }) });
    const answer = queue.shift() ?? standing;
    if (answer === 'hang') return new Promise(() => undefined);
    if (answer === 'manual') return new Promise<T>((resolve) => held.push(resolve)).then(deliver);
    if (typeof answer === 'object' && answer !== null && 'after' in answer) {
      return new Promise<T>((resolve) => {
        time.timers.setTimeout(() => {
          resolve(answer.answer);
        }, answer.after);
      }).then(deliver);
    }
    return deliver(answer);
  };
  return { control, call };
}

type LedgerAnswer = 'ok' | Error;

interface LogLine {
  readonly level: 'info' | 'warn';
  readonly at: number;
  readonly entry: Record<string, unknown>;
}

interface HarnessOptions extends Partial<Pick<ReadinessMonitorDependencies, 'intervalMs' | 'startupIntervalMs' | 'isFatalAtStartup' | 'ledgerFailureReason' | 'ledger'>> {
  readonly readiness?: Readiness;
}

function harness(options: HarnessOptions = {}) {
  const time = createFakeTime();
  const t0 = time.clock.now();
  const readiness = options.readiness ?? createReadiness();
  const engine = scripted<EngineSample>(time, OK, (sample) => Promise.resolve(sample));
  const ledger = scripted<LedgerAnswer>(time, 'ok', (answer) => (answer === 'ok' ? Promise.resolve() : Promise.reject(answer)));
  const lines: LogLine[] = [];
  const waiters: { test: (entry: Record<string, unknown>) => boolean; resolve: (entry: Record<string, unknown>) => void }[] = [];
  const log = (level: LogLine['level']) => (entry: Record<string, unknown>) => {
    lines.push({ level, at: time.clock.now(), entry });
    for (const waiter of waiters.splice(0)) {
      if (waiter.test(entry)) waiter.resolve(entry);
      else waiters.push(waiter);
    }
  };
  const monitor = createReadinessMonitor({
    clock: time.clock,
    timers: time.timers,
    readiness,
    logger: { info: log('info'), warn: log('warn') },
    engine: (request) => engine.call(request.timeoutMs) as Promise<EngineSample>,
    ledger: options.ledger ?? (() => ledger.call() as Promise<void>),
    ...(options.intervalMs === undefined ? {} : { intervalMs: options.intervalMs }),
    ...(options.startupIntervalMs === undefined ? {} : { startupIntervalMs: options.startupIntervalMs }),
    ...(options.isFatalAtStartup === undefined ? {} : { isFatalAtStartup: options.isFatalAtStartup }),
    ...(options.ledgerFailureReason === undefined ? {} : { ledgerFailureReason: options.ledgerFailureReason }),
  });
  let outcome: StartupOutcome | { rejected: unknown } | undefined;
  return {
    time,
    t0,
    readiness,
    monitor,
    engine: engine.control,
    ledger: ledger.control,
    lines,
    /** The `executor_dependency_probe` entries of one dependency, oldest first. */
    probes: (dependency: 'workflow_engine' | 'ledger') =>
      lines.filter((line) => line.entry.event === 'executor_dependency_probe' && line.entry.dependency === dependency).map((line) => line.entry),
    events: (event: string) => lines.filter((line) => line.entry.event === event),
    /** Resolves with the first entry logged from now on that matches. */
    logged: (test: (entry: Record<string, unknown>) => boolean) =>
      new Promise<Record<string, unknown>>((resolve) => waiters.push({ test, resolve })),
    /** Starts the monitor and runs the first round; `startup()` then tells how start() ended, if it has. */
    async start() {
      monitor.start().then(
        (value) => (outcome = value),
        (error: unknown) => (outcome = { rejected: error }),
      );
      await time.settle();
    },
    startup: () => outcome,
  };
}

type Harness = ReturnType<typeof harness>;

/** A monitor whose first round (at t0) supplied both startup proofs. */
async function readyHarness(options: HarnessOptions = {}): Promise<Harness> {
  const h = harness(options);
  await h.start();
  expect(h.startup()).toBe('ready');
  expect(h.readiness.isReady()).toBe(true);
  return h;
}

/** A holder that counts restorations, to catch even a momentary one. */
function countingReadiness(): Readiness & { restorations(): number } {
  const inner = createReadiness();
  let restorations = 0;
  return {
    ...inner,
    restore() {
      restorations += 1;
      inner.restore();
    },
    restorations: () => restorations,
  };
}

const isReady = (state: ReadinessState) => state.ready;

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

describe('rule 4: recovery grace is a fixed 30 seconds', () => {
  it('is 30 000 ms', () => {
    expect(READINESS_GRACE_MS).toBe(30_000);
  });

  it.each([1_000, 7_000, 30_000])('ends a cancellation sequence 30 s after its start with a %i ms probe interval', async (intervalMs) => {
    const h = await readyHarness({ intervalMs });
    h.engine.always(CANCELLED);
    await h.time.advance(intervalMs);
    const windowStart = h.t0 + intervalMs;
    expect(h.monitor.state().engine.windowStart).toBe(windowStart);
    await h.time.advance(29_999);
    expect(h.readiness.isReady()).toBe(true);
    await h.time.advance(1);
    expect(h.readiness.isReady()).toBe(false);
    expect(h.events('executor_readiness_withdrawn').map((line) => line.at)).toEqual([windowStart + 30_000]);
  });
});

describe('rule 5: a Cancelled task-queue RPC gets one immediate bounded confirmation', () => {
  it('confirms at once, at the same instant, with the short bound, and a healthy confirmation is a healthy sample', async () => {
    const h = await readyHarness();
    h.engine.next({ after: 400, answer: CANCELLED }, OK);
    await h.time.advance(INTERVAL + 400);
    expect(h.engine.calls.slice(1)).toEqual([
      { at: h.t0 + INTERVAL, timeoutMs: PROBE_TIMEOUT_MS },
      { at: h.t0 + INTERVAL + 400, timeoutMs: CANCELLATION_CONFIRMATION_TIMEOUT_MS },
    ]);
    expect(h.probes('workflow_engine').at(-1)).toEqual({
      event: 'executor_dependency_probe',
      dependency: 'workflow_engine',
      outcome: 'ok',
      consecutive_failures: 0,
      pollers: 1,
      confirmation: 'ok',
    });
    expect(h.readiness.isReady()).toBe(true);
  });

  it('does not confirm a cancelled confirmation again: exactly two RPCs until the next round', async () => {
    const h = await readyHarness();
    h.engine.next(CANCELLED, CANCELLED);
    await h.time.advance(INTERVAL);
    expect(h.engine.calls.map((call) => call.at)).toEqual([h.t0, h.t0 + INTERVAL, h.t0 + INTERVAL]);
    await h.time.advance(INTERVAL - 1);
    expect(h.engine.calls).toHaveLength(3);
    await h.time.advance(1);
    expect(h.engine.calls).toHaveLength(4);
  });

  it('keeps readiness through confirmed cancellations while the window is below 30 s, counting one failure per sample', async () => {
    const h = await readyHarness();
    h.engine.always(CANCELLED);
    await h.time.advance(6 * INTERVAL);
    expect(h.readiness.isReady()).toBe(true);
    expect(h.probes('workflow_engine').slice(1).map((entry) => entry.consecutive_failures)).toEqual([1, 2, 3, 4, 5, 6]);
  });

  it('keeps the original window start: that of the first cancelled RPC, not of a slower confirmation', async () => {
    const h = await readyHarness();
    h.engine.always(CANCELLED);
    h.engine.next(CANCELLED, { after: 1_500, answer: CANCELLED });
    const windowStart = h.t0 + INTERVAL;
    await h.time.advance(INTERVAL + 1_500);
    expect(h.monitor.state().engine.windowStart).toBe(windowStart);
    await h.time.advance(windowStart + 29_999 - h.time.clock.now());
    expect(h.readiness.isReady()).toBe(true);
    await h.time.advance(1);
    expect(h.readiness.isReady()).toBe(false);
    expect(h.readiness.reason()).toBe('workflow_engine_cancelled');
  });

  it('keeps the window of an earlier failure when cancellations follow it', () => {
    let state: ReadinessState = { ...initialReadinessState(), started: true, pollerProof: true, ready: true };
    state = observeEngine(state, { outcome: 'error' }, 1_000, 1_000);
    state = observeEngine(state, { outcome: 'cancelled' }, 6_000, 6_100);
    expect(state.engine).toEqual({ health: 'cancelled', consecutiveFailures: 2, windowStart: 1_000 });
  });

  it('preserves readiness strictly below 30 s of window, not at 30 s', () => {
    const held: ReadinessState = {
      ...initialReadinessState(),
      started: true,
      pollerProof: true,
      ready: true,
      engine: { health: 'cancelled', consecutiveFailures: 1, windowStart: 0 },
    };
    expect(observeEngine(held, { outcome: 'cancelled' }, 29_000, 29_999).ready).toBe(true);
    expect(observeEngine(held, { outcome: 'cancelled' }, 29_000, 30_000).ready).toBe(false);
  });

  it('preserves readiness only after startup supplied the poller proof', () => {
    const base = { ...initialReadinessState(), ready: true, started: true };
    expect(isReady(observeEngine({ ...base, pollerProof: false }, { outcome: 'cancelled' }, 0, 0))).toBe(false);
    expect(isReady(observeEngine({ ...base, pollerProof: true }, { outcome: 'cancelled' }, 0, 0))).toBe(true);
  });

  it('never establishes readiness at startup, even with the poller proof and a healthy ledger', async () => {
    const h = harness();
    h.ledger.next(new Error('down'));
    await h.start();
    expect(h.monitor.state().pollerProof).toBe(true);
    h.engine.always(CANCELLED);
    await h.time.advance(3 * INTERVAL);
    expect(h.readiness.isReady()).toBe(false);
    expect(h.readiness.reason()).toBe('workflow_engine_cancelled');
    expect(h.startup()).toBeUndefined();
    h.engine.always(OK);
    await h.time.advance(INTERVAL);
    expect(h.startup()).toBe('ready');
  });

  it('never restores readiness after a real error, however long the cancellations last', async () => {
    const readiness = countingReadiness();
    const h = await readyHarness({ readiness });
    h.engine.next(UNAVAILABLE);
    await h.time.advance(INTERVAL);
    expect(h.readiness.isReady()).toBe(false);
    h.engine.always(CANCELLED);
    await h.time.advance(10 * INTERVAL);
    expect(h.readiness.isReady()).toBe(false);
    expect(readiness.restorations()).toBe(1);
    h.engine.always(OK);
    await h.time.advance(INTERVAL);
    expect(h.readiness.isReady()).toBe(true);
  });

  it('withdraws at once when the confirmation fails with another status', async () => {
    const h = await readyHarness();
    h.engine.next(CANCELLED, { outcome: 'error', code: 'UNAVAILABLE' });
    await h.time.advance(INTERVAL);
    expect(h.readiness.isReady()).toBe(false);
    expect(h.probes('workflow_engine').at(-1)).toMatchObject({ outcome: 'error', grpc_status: 'UNAVAILABLE', confirmation: 'error', consecutive_failures: 1 });
  });

  it('bounds the confirmation: no answer within 2 s is DEADLINE_EXCEEDED and withdraws', async () => {
    const h = await readyHarness();
    h.engine.next(CANCELLED, 'hang');
    await h.time.advance(INTERVAL + CANCELLATION_CONFIRMATION_TIMEOUT_MS - 1);
    expect(h.readiness.isReady()).toBe(true);
    await h.time.advance(1);
    expect(h.readiness.isReady()).toBe(false);
    expect(h.probes('workflow_engine').at(-1)).toMatchObject({ outcome: 'error', grpc_status: 'DEADLINE_EXCEEDED', confirmation: 'error' });
  });
});

describe('rule 6: every successful task-queue RPC confirms runtime reachability', () => {
  it('restores readiness after an error on an answer with an empty historical poller list', async () => {
    const h = await readyHarness();
    h.engine.next(UNAVAILABLE);
    await h.time.advance(INTERVAL);
    expect(h.readiness.isReady()).toBe(false);
    h.engine.always(EMPTY);
    await h.time.advance(INTERVAL);
    expect(h.readiness.isReady()).toBe(true);
    expect(h.probes('workflow_engine').at(-1)).toMatchObject({ outcome: 'ok', pollers: 0, consecutive_failures: 0 });
  });

  it('ends a cancellation sequence with an empty poller list: no withdrawal at the old boundary', async () => {
    const h = await readyHarness();
    h.engine.next(CANCELLED, CANCELLED, EMPTY);
    h.engine.always(OK);
    await h.time.advance(INTERVAL * 2);
    expect(h.monitor.state().engine).toEqual({ health: 'ok', consecutiveFailures: 0, windowStart: undefined });
    await h.time.advance(60_000);
    expect(h.readiness.isReady()).toBe(true);
    expect(h.events('executor_readiness_withdrawn')).toEqual([]);
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
      logger: { info: () => undefined, warn: () => undefined },
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

describe('rule 9: an uninterrupted cancellation sequence withdraws readiness at the grace boundary', () => {
  it('withdraws exactly at the boundary, between samples, and stays withdrawn until a healthy sample', async () => {
    const h = await readyHarness({ intervalMs: 7_000 });
    h.engine.always(CANCELLED);
    await h.time.advance(7_000);
    const boundary = h.t0 + 7_000 + READINESS_GRACE_MS;
    await h.time.advance(boundary - h.time.clock.now() - 1);
    expect(h.readiness.isReady()).toBe(true);
    await h.time.advance(1);
    expect(h.readiness.isReady()).toBe(false);
    expect(h.engine.calls.some((call) => call.at === boundary)).toBe(false);
    expect(h.events('executor_readiness_withdrawn').map((line) => [line.at, line.entry.reason])).toEqual([[boundary, 'workflow_engine_cancelled']]);
    await h.time.advance(5 * 7_000);
    expect(h.readiness.isReady()).toBe(false);
    h.engine.always(OK);
    await h.time.advance(7_000);
    expect(h.readiness.isReady()).toBe(true);
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

describe('rule 11: runtime probe intervals are capped at the grace duration', () => {
  it('defaults to 5 s and clamps to [100 ms, 30 s]', () => {
    expect(probeIntervalMs()).toBe(5_000);
    expect(probeIntervalMs(Number.NaN)).toBe(5_000);
    expect(probeIntervalMs(60_000)).toBe(30_000);
    expect(probeIntervalMs(Number.POSITIVE_INFINITY)).toBe(30_000);
    expect(probeIntervalMs(30_000)).toBe(30_000);
    expect(probeIntervalMs(12_000)).toBe(12_000);
    expect(probeIntervalMs(0)).toBe(MIN_PROBE_INTERVAL_MS);
  });

  it('samples every 30 s when asked for two minutes', async () => {
    const h = await readyHarness({ intervalMs: 120_000 });
    expect(h.monitor.intervalMs).toBe(30_000);
    await h.time.advance(60_000);
    expect(h.engine.calls.map((call) => call.at)).toEqual([h.t0, h.t0 + 30_000, h.t0 + 60_000]);
  });

  it('measures the interval from start to start, so a slow probe does not stretch it', async () => {
    const h = await readyHarness();
    h.ledger.always({ after: 3_000, answer: 'ok' });
    await h.time.advance(3 * INTERVAL);
    expect(h.engine.calls.map((call) => call.at)).toEqual([0, 1, 2, 3].map((round) => h.t0 + round * INTERVAL));
  });

  it('bounds a hung probe, so the next sample still starts within the grace duration', async () => {
    const h = await readyHarness({ intervalMs: 30_000 });
    h.engine.next('hang');
    await h.time.advance(30_000 + PROBE_TIMEOUT_MS);
    expect(h.readiness.isReady()).toBe(false);
    expect(h.probes('workflow_engine').at(-1)).toMatchObject({ outcome: 'error', grpc_status: 'DEADLINE_EXCEEDED' });
    await h.time.advance(30_000 - PROBE_TIMEOUT_MS);
    expect(h.engine.calls.map((call) => call.at)).toEqual([h.t0, h.t0 + 30_000, h.t0 + 60_000]);
    expect(h.readiness.isReady()).toBe(true);
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
