import { grpcStatusName } from './domain/grpc-status.js';
import {
  concludeRound,
  expireGrace,
  graceDeadline,
  initialReadinessState,
  notReadyReason,
  observeDisk,
  observeEngine,
  observeLedger,
  probeIntervalMs,
  type EngineObservation,
  type ReadinessState,
} from './domain/readiness-state.js';
import type { Readiness } from './readiness.js';

/*
 * The dependency readiness monitor (spec §3 rules 1–11, §6 `executor_dependency_probe`, §8).
 * It samples the workflow engine and the ledger in rounds, feeds the samples to the pure rules
 * in domain/readiness-state.ts and applies the outcome to the Readiness holder admission reads.
 * It never stops the executor or a managed engine child; it only opens and closes admission.
 * Mode-agnostic: embedded, managed_local and external differ only in the `engine` probe given.
 */

/** Upper bound of one probe call (engine RPC or ledger proof); a probe that hangs counts as failed. */
export const PROBE_TIMEOUT_MS = 10_000;
/** Upper bound of the one immediate confirmation after a Cancelled task-queue RPC (rule 5, §8). */
export const CANCELLATION_CONFIRMATION_TIMEOUT_MS = 2_000;

/** One workflow-engine task-queue RPC (DescribeTaskQueue, or the embedded engine's equivalent). */
export type EngineSample =
  /** `foreignPollers`: pollers of the task queue that are not this installation's (Temporal only). */
  | { readonly outcome: 'ok'; readonly pollers: number; readonly foreignPollers?: number }
  | { readonly outcome: 'cancelled' }
  /** `code`: the gRPC status name (or number) when known; anything else is dropped, never logged. */
  | { readonly outcome: 'error'; readonly code?: string | number };

/** A `setTimeout`-like port, so tests drive time without waiting. */
export interface TimerPort {
  setTimeout(callback: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

export interface ReadinessMonitorLogger {
  info(entry: Record<string, unknown>): void;
  warn(entry: Record<string, unknown>): void;
  error(entry: Record<string, unknown>): void;
}

/** One look at the free space of the executor's directories: the first one below the minimum, or null. */
export type DiskSample = { readonly path: string; readonly availableBytes: number } | null;

export interface ReadinessMonitorDependencies {
  readonly clock: { now(): number };
  readonly timers: TimerPort;
  readonly readiness: Readiness;
  readonly logger: ReadinessMonitorLogger;
  /** One task-queue RPC. `timeoutMs` is the bound the monitor enforces; pass it on as the RPC deadline. */
  readonly engine: (request: { readonly timeoutMs: number }) => Promise<EngineSample>;
  /** The ledger proof including protected access with the loaded credential (rule 3); throws on any failure. */
  readonly ledger: () => Promise<void>;
  /**
   * The free space of the directories the executor writes (issue 26), sampled every round beside
   * the dependencies; a full one withdraws readiness (`disk_full`). Absent: not sampled.
   */
  readonly disk?: () => Promise<DiskSample>;
  /** The free space `disk` holds a directory to (logged beside a full one). */
  readonly minFreeBytes?: number;
  /** Requested time between sample starts; default 5 s, clamped to [100 ms, 30 s] (rule 11). */
  readonly intervalMs?: number;
  /**
   * Time between sample starts until readiness is first established (a shorter wait for the
   * startup proofs: a worker that just began polling); default: `intervalMs`. Clamped the same way.
   */
  readonly startupIntervalMs?: number;
  /**
   * A safe, categorical name for a ledger failure (e.g. `unavailable`, `ledger_version_mismatch`),
   * logged as `reason`. Anything that is not a short snake_case token is dropped.
   */
  readonly ledgerFailureReason?: (error: unknown) => string | undefined;
  /**
   * Ledger failures that end startup: `start()` rejects with the error and probing stops. Only
   * consulted before readiness was first established; afterwards every failure only withdraws.
   */
  readonly isFatalAtStartup?: (error: unknown) => boolean;
}

export type StartupOutcome = 'ready' | 'stopped';

export interface ReadinessMonitor {
  /**
   * Starts sampling (the first round at once) and resolves `ready` when both startup proofs
   * exist, `stopped` if stop() came first; rejects only with an `isFatalAtStartup` error.
   * Calling it again returns the same promise.
   */
  start(): Promise<StartupOutcome>;
  /** Stops sampling and clears every timer it set. Leaves the Readiness holder as it is. */
  stop(): void;
  /**
   * Samples now instead of at the next interval (the engine knows something changed: a managed
   * child exited or came back). A round under way is followed at once by another; never overlapped.
   */
  sampleNow(): void;
  /** The interval in use after clamping. */
  readonly intervalMs: number;
  /** The rules' current state (for status output and tests). */
  state(): ReadinessState;
}

const SAFE_REASON = /^[a-z][a-z0-9_]{0,63}$/;

type Bounded<T> = { readonly kind: 'answered'; readonly value: T } | { readonly kind: 'failed'; readonly error: unknown } | { readonly kind: 'timeout' };

/**
 * How often a healthy dependency is confirmed in the log: a successful probe is logged when the
 * outcome changes (the first one, and the first after a failure) and then once per this interval
 * as a summary with the number of healthy samples it stands for — not every 5 s sample, which
 * would flood the log. Every failed sample is logged.
 */
export const HEALTHY_PROBE_SUMMARY_MS = 5 * 60_000;

export function createReadinessMonitor(deps: ReadinessMonitorDependencies): ReadinessMonitor {
  const intervalMs = probeIntervalMs(deps.intervalMs);
  const startupIntervalMs = Math.min(intervalMs, probeIntervalMs(deps.startupIntervalMs ?? intervalMs));
  const { clock, timers, readiness, logger } = deps;
  let state = initialReadinessState();
  let phase: 'idle' | 'running' | 'stopped' = 'idle';
  let roundTimer: unknown;
  let grace: { readonly handle: unknown; readonly deadline: number } | undefined;
  const probeTimers = new Set<unknown>();
  let startup: { promise: Promise<StartupOutcome>; resolve(outcome: StartupOutcome): void; reject(error: unknown): void } | undefined;
  /** Per dependency: whether the last sample was healthy, when a healthy line was last written, and the healthy samples since. */
  const quiet = new Map<string, { healthy: boolean; loggedAt: number; samples: number; shape: string }>();

  /** Writes a probe event: every failure, and healthy samples only on a change or as a periodic summary. */
  function logProbe(entry: Record<string, unknown>, healthy: boolean): void {
    const dependency = String(entry.dependency);
    const now = clock.now();
    const last = quiet.get(dependency);
    // What a healthy line says besides its counters: a change of it (the engine's pollers going
    // from 0 to 1, a cancellation's confirmation) is worth its own line.
    const shape = JSON.stringify({ ...entry, consecutive_failures: undefined });
    if (!healthy) {
      quiet.set(dependency, { healthy: false, loggedAt: last?.loggedAt ?? now, samples: 0, shape });
      logger.warn(entry);
      return;
    }
    const samples = (last?.samples ?? 0) + 1;
    const unchanged = last?.healthy === true && last.shape === shape && entry.confirmation === undefined;
    if (unchanged && now - last.loggedAt < HEALTHY_PROBE_SUMMARY_MS) {
      quiet.set(dependency, { ...last, samples });
      return;
    }
    quiet.set(dependency, { healthy: true, loggedAt: now, samples: 0, shape });
    logger.info(unchanged ? { ...entry, healthy_samples: samples } : entry);
  }

  /** Runs `operation`, giving up (not cancelling it) after `ms`; a late answer is ignored. */
  function bounded<T>(operation: () => Promise<T>, ms: number): Promise<Bounded<T>> {
    return new Promise((resolve) => {
      const handle = timers.setTimeout(() => {
        probeTimers.delete(handle);
        resolve({ kind: 'timeout' });
      }, ms);
      probeTimers.add(handle);
      const settle = (result: Bounded<T>) => {
        timers.clearTimeout(handle);
        probeTimers.delete(handle);
        resolve(result);
      };
      try {
        operation().then(
          (value) => {
            settle({ kind: 'answered', value });
          },
          (error: unknown) => {
            settle({ kind: 'failed', error });
          },
        );
      } catch (error) {
        settle({ kind: 'failed', error });
      }
    });
  }

  function apply(next: ReadinessState): void {
    const previous = state;
    state = next;
    if (next.ready && !previous.ready) {
      readiness.restore();
      logger.info({ event: 'executor_ready', recovered: previous.started });
      startup?.resolve('ready');
    } else if (!next.ready) {
      const reason = notReadyReason(next);
      if (previous.ready) logger.warn({ event: 'executor_readiness_withdrawn', reason });
      const path = reason === 'disk_full' ? (next.diskFull ?? undefined) : undefined;
      if (previous.ready || readiness.reason() !== reason || readiness.path() !== path) readiness.withdraw(reason, path);
    }
    armGrace();
  }

  /** Keeps exactly one timer at the grace boundary of a cancellation sequence readiness survives. */
  function armGrace(): void {
    const deadline = graceDeadline(state);
    if (grace?.deadline === deadline) return;
    if (grace !== undefined) timers.clearTimeout(grace.handle);
    grace = undefined;
    if (deadline === undefined || phase !== 'running') return;
    const handle = timers.setTimeout(() => {
      grace = undefined;
      if (phase !== 'running') return;
      try {
        apply(expireGrace(state, clock.now()));
      } catch {
        // As in round(): a throwing logger or holder must not end the process (rule 10).
      }
    }, Math.max(0, deadline - clock.now()));
    grace = { handle, deadline };
  }

  async function engineRpc(timeoutMs: number): Promise<EngineSample> {
    const answer = await bounded(() => deps.engine({ timeoutMs }), timeoutMs);
    if (answer.kind === 'answered') return answer.value;
    // An adapter that throws instead of answering is a plain error; past the bound, gRPC's own word.
    return answer.kind === 'timeout' ? { outcome: 'error', code: 'DEADLINE_EXCEEDED' } : { outcome: 'error' };
  }

  async function sampleEngine(): Promise<void> {
    const first = await engineRpc(PROBE_TIMEOUT_MS);
    const at = clock.now();
    // Rule 5: one immediate confirmation, no timer in between; both RPCs are one sample.
    const final = first.outcome === 'cancelled' && phase === 'running' ? await engineRpc(CANCELLATION_CONFIRMATION_TIMEOUT_MS) : first;
    if (phase !== 'running') return;
    const foreign = final.outcome === 'ok' ? (final.foreignPollers ?? 0) : 0;
    const observation: EngineObservation =
      final.outcome === 'ok' ? { outcome: 'ok', pollers: final.pollers, foreignPollers: foreign } : { outcome: final.outcome };
    const next = observeEngine(state, observation, at, clock.now());
    const status = final.outcome === 'cancelled' ? 'CANCELLED' : final.outcome === 'error' ? grpcStatusName(final.code) : undefined;
    const entry: Record<string, unknown> = {
      event: 'executor_dependency_probe',
      dependency: 'workflow_engine',
      outcome: final.outcome,
      consecutive_failures: next.engine.consecutiveFailures,
    };
    if (status !== undefined) entry.grpc_status = status;
    if (final.outcome === 'ok') entry.pollers = final.pollers;
    // Another installation's worker on the queue: reachable, but not a sample readiness can stand on.
    if (foreign > 0) entry.foreign_pollers = foreign;
    if (first.outcome === 'cancelled') entry.confirmation = final.outcome;
    logProbe(entry, final.outcome === 'ok' && foreign === 0);
    apply(next);
  }

  async function sampleLedger(): Promise<void> {
    const answer = await bounded(deps.ledger, PROBE_TIMEOUT_MS);
    if (phase !== 'running') return;
    if (answer.kind === 'failed' && !state.started && deps.isFatalAtStartup?.(answer.error) === true) {
      halt();
      startup?.reject(answer.error);
      return;
    }
    const next = observeLedger(state, answer.kind === 'answered', clock.now());
    const entry: Record<string, unknown> = {
      event: 'executor_dependency_probe',
      dependency: 'ledger',
      outcome: answer.kind === 'answered' ? 'ok' : 'error',
      consecutive_failures: next.ledger.consecutiveFailures,
    };
    if (answer.kind !== 'answered') {
      const reason = answer.kind === 'timeout' ? 'timeout' : safeReason(answer.error);
      if (reason !== undefined) entry.reason = reason;
    }
    logProbe(entry, answer.kind === 'answered');
    apply(next);
  }

  /**
   * One disk sample. Said at error level once when a directory fills and at info once when it has
   * room again — bounded whatever the request rate, and written to stderr (the supervisor's pipe),
   * never to the full disk itself. A sampler that fails or hangs tells nothing: the last word stands.
   */
  async function sampleDisk(): Promise<void> {
    if (deps.disk === undefined) return;
    const answer = await bounded(deps.disk, PROBE_TIMEOUT_MS);
    if (phase !== 'running' || answer.kind !== 'answered') return;
    const full = answer.value;
    const before = state.diskFull;
    if (full !== null && before !== full.path) {
      logger.error({
        event: 'executor_disk_full',
        reason: 'disk_full',
        path: full.path,
        available_bytes: full.availableBytes,
        ...(deps.minFreeBytes === undefined ? {} : { min_free_bytes: deps.minFreeBytes }),
        next_step: 'Free space on that filesystem (or move LEXEC_HOME); new executions are refused until then, reads go on.',
      });
    } else if (full === null && before !== null) {
      logger.info({ event: 'executor_disk_space_recovered', path: before });
    }
    apply(observeDisk(state, full?.path ?? null));
  }

  function safeReason(error: unknown): string | undefined {
    try {
      const reason = deps.ledgerFailureReason?.(error);
      return reason !== undefined && SAFE_REASON.test(reason) ? reason : undefined;
    } catch {
      return undefined;
    }
  }

  let inRound = false;
  let again = false;

  /** One round: both dependencies and the disk sampled concurrently, then establishment or restoration. */
  async function round(): Promise<void> {
    roundTimer = undefined;
    inRound = true;
    const began = clock.now();
    try {
      await Promise.all([sampleEngine(), sampleLedger(), sampleDisk()]);
      if (phase === 'running') apply(concludeRound(state));
    } catch {
      // Only a throwing logger or holder gets here; probing must go on regardless (rule 10).
    }
    inRound = false;
    if (phase !== 'running') return;
    // Start to start: a slow round is followed at once, never overlapped.
    const wait = again ? 0 : state.started ? intervalMs : startupIntervalMs;
    again = false;
    roundTimer = timers.setTimeout(() => void round(), Math.max(0, began + wait - clock.now()));
  }

  function halt(): void {
    phase = 'stopped';
    if (roundTimer !== undefined) timers.clearTimeout(roundTimer);
    roundTimer = undefined;
    if (grace !== undefined) timers.clearTimeout(grace.handle);
    grace = undefined;
    for (const handle of probeTimers) timers.clearTimeout(handle);
    probeTimers.clear();
  }

  return {
    intervalMs,
    state: () => state,
    start() {
      if (startup !== undefined) return startup.promise;
      let resolve!: (outcome: StartupOutcome) => void;
      let reject!: (error: unknown) => void;
      const promise = new Promise<StartupOutcome>((onResolve, onReject) => {
        resolve = onResolve;
        reject = onReject;
      });
      startup = { promise, resolve, reject };
      if (phase === 'stopped') {
        resolve('stopped');
        return promise;
      }
      phase = 'running';
      void round();
      return promise;
    },
    stop() {
      halt();
      startup?.resolve('stopped');
    },
    sampleNow() {
      if (phase !== 'running') return;
      if (inRound) {
        again = true;
        return;
      }
      if (roundTimer !== undefined) timers.clearTimeout(roundTimer);
      void round();
    },
  };
}

/** The process's timers, unreferenced so a pending probe never keeps the process alive. */
export function systemTimers(): TimerPort {
  return {
    setTimeout: (callback, ms) => setTimeout(callback, ms).unref(),
    clearTimeout: (handle) => {
      clearTimeout(handle as NodeJS.Timeout);
    },
  };
}
