import { expect } from 'vitest';
import { DEFAULT_PROBE_INTERVAL_MS, type ReadinessState } from '../../src/executor/domain/readiness-state.js';
import { createReadiness, type Readiness } from '../../src/executor/readiness.js';
import { createReadinessMonitor, type EngineSample, type ReadinessMonitorDependencies, type StartupOutcome } from '../../src/executor/readiness-monitor.js';
import { createFakeTime, type FakeTime } from './fake-time.js';

/*
 * The readiness monitor's test harness (test/executor/readiness-monitor*.test.ts): a monitor on a
 * fake clock and timer port, whose engine and ledger probes give scripted answers, with its log
 * lines kept for the tests to read. Nothing sleeps.
 */

export const OK: EngineSample = { outcome: 'ok', pollers: 1 };
export const EMPTY: EngineSample = { outcome: 'ok', pollers: 0 };
export const CANCELLED: EngineSample = { outcome: 'cancelled' };
export const UNAVAILABLE: EngineSample = { outcome: 'error', code: 'UNAVAILABLE' };
export const INTERVAL = DEFAULT_PROBE_INTERVAL_MS;

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

export type LedgerAnswer = 'ok' | Error;

export interface LogLine {
  readonly level: 'info' | 'warn' | 'error';
  readonly at: number;
  readonly entry: Record<string, unknown>;
}

export interface HarnessOptions extends Partial<Pick<ReadinessMonitorDependencies, 'intervalMs' | 'startupIntervalMs' | 'isFatalAtStartup' | 'ledgerFailureReason' | 'ledger' | 'disk'>> {
  readonly readiness?: Readiness;
}

export function harness(options: HarnessOptions = {}) {
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
    logger: { info: log('info'), warn: log('warn'), error: log('error') },
    engine: (request) => engine.call(request.timeoutMs) as Promise<EngineSample>,
    ledger: options.ledger ?? (() => ledger.call() as Promise<void>),
    ...(options.intervalMs === undefined ? {} : { intervalMs: options.intervalMs }),
    ...(options.startupIntervalMs === undefined ? {} : { startupIntervalMs: options.startupIntervalMs }),
    ...(options.isFatalAtStartup === undefined ? {} : { isFatalAtStartup: options.isFatalAtStartup }),
    ...(options.ledgerFailureReason === undefined ? {} : { ledgerFailureReason: options.ledgerFailureReason }),
    ...(options.disk === undefined ? {} : { disk: options.disk }),
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

export type Harness = ReturnType<typeof harness>;

/** A monitor whose first round (at t0) supplied both startup proofs. */
export async function readyHarness(options: HarnessOptions = {}): Promise<Harness> {
  const h = harness(options);
  await h.start();
  expect(h.startup()).toBe('ready');
  expect(h.readiness.isReady()).toBe(true);
  return h;
}

/** A holder that counts restorations, to catch even a momentary one. */
export function countingReadiness(): Readiness & { restorations(): number } {
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

export const isReady = (state: ReadinessState) => state.ready;
