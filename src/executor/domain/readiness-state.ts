/*
 * The readiness rules of spec §3 as a pure state machine: what the dependency samples mean for
 * whether the executor admits new executions. No clock, no timers, no I/O — the monitor
 * (../readiness-monitor.ts) samples, passes times in, and applies the result.
 */

/** Recovery grace (spec §3 rule 4, §8): fixed, not configurable. */
export const READINESS_GRACE_MS = 30_000;
/** The default time between the starts of two monitor samples. */
export const DEFAULT_PROBE_INTERVAL_MS = 5_000;
/** The shortest interval accepted, so a misconfiguration cannot turn probing into a busy loop. */
export const MIN_PROBE_INTERVAL_MS = 100;

/** The probe interval actually used: the default when absent or NaN, otherwise clamped to [MIN, grace] (rule 11). */
export function probeIntervalMs(requested?: number): number {
  if (requested === undefined || Number.isNaN(requested)) return DEFAULT_PROBE_INTERVAL_MS;
  return Math.min(Math.max(Math.round(requested), MIN_PROBE_INTERVAL_MS), READINESS_GRACE_MS);
}

/** A dependency's last sample: not yet sampled, healthy, cancelled (engine only) or failed. */
export type DependencyHealth = 'unknown' | 'ok' | 'cancelled' | 'error';

export interface DependencyRecord {
  readonly health: DependencyHealth;
  /** Consecutive failed monitor samples (a cancellation confirmation is part of one sample). */
  readonly consecutiveFailures: number;
  /** When the current run of failed samples began; undefined while healthy. */
  readonly windowStart: number | undefined;
}

export interface ReadinessState {
  /** Readiness was established once: both startup proofs were supplied. */
  readonly started: boolean;
  /** A successful task-queue RPC reported at least one poller (rule 1); never forgotten. */
  readonly pollerProof: boolean;
  /**
   * The last successful task-queue RPC showed a poller of another installation: a worker that
   * would run this executor's executions. Not admitting while it lasts (docs/readiness.md
   * `task_queue_shared`).
   */
  readonly queueShared: boolean;
  /**
   * The directory (database, artifacts, engine data) whose filesystem the last disk sample found
   * below the minimum free space; null while every one has room. Not admitting while it lasts
   * (docs/readiness.md `disk_full`): a job admitted now would fail at its first write.
   */
  readonly diskFull: string | null;
  readonly ready: boolean;
  readonly engine: DependencyRecord;
  readonly ledger: DependencyRecord;
}

/** The final outcome of one workflow-engine sample (after any cancellation confirmation). */
export type EngineObservation =
  | { readonly outcome: 'ok'; readonly pollers: number; readonly foreignPollers?: number }
  | { readonly outcome: 'cancelled' }
  | { readonly outcome: 'error' };

const unsampled: DependencyRecord = { health: 'unknown', consecutiveFailures: 0, windowStart: undefined };
const healthy: DependencyRecord = { health: 'ok', consecutiveFailures: 0, windowStart: undefined };

export function initialReadinessState(): ReadinessState {
  return { started: false, pollerProof: false, queueShared: false, diskFull: null, ready: false, engine: unsampled, ledger: unsampled };
}

/** One more failed sample: the count grows by one and the window keeps its original start. */
function failed(record: DependencyRecord, health: 'cancelled' | 'error', at: number): DependencyRecord {
  return { health, consecutiveFailures: record.consecutiveFailures + 1, windowStart: record.windowStart ?? at };
}

/**
 * Applies one workflow-engine sample. `at` is when the sample's first RPC answered (a failure
 * window that begins with this sample begins then); `now` is when the sample was complete.
 * - ok (rule 6, 8): reachability confirmed, even with no pollers; the failure window resets.
 *   Readiness is not restored here but at the end of the round (concludeRound), when every
 *   dependency has reported. An ok that shows another installation's poller on the task queue
 *   withdraws at once (a worker that would run this executor's executions), and restoring waits
 *   for an ok without one.
 * - error (rule 7): withdrawn at once.
 * - cancelled, i.e. confirmed by a second cancelled RPC (rule 5): counted, window kept;
 *   readiness survives only if it is already held (so never established or restored), startup
 *   supplied the poller proof, and the window is strictly below the grace.
 */
export function observeEngine(state: ReadinessState, observation: EngineObservation, at: number, now: number): ReadinessState {
  switch (observation.outcome) {
    case 'ok': {
      const queueShared = (observation.foreignPollers ?? 0) > 0;
      return { ...state, engine: healthy, pollerProof: state.pollerProof || observation.pollers >= 1, queueShared, ready: state.ready && !queueShared };
    }
    case 'error':
      return { ...state, engine: failed(state.engine, 'error', at), ready: false };
    case 'cancelled': {
      const engine = failed(state.engine, 'cancelled', at);
      const withinGrace = engine.windowStart !== undefined && now - engine.windowStart < READINESS_GRACE_MS;
      return { ...state, engine, ready: state.ready && state.started && state.pollerProof && withinGrace };
    }
  }
}

/** Applies one ledger sample: a success resets its window; any failure withdraws at once (rule 7). */
export function observeLedger(state: ReadinessState, ok: boolean, at: number): ReadinessState {
  return ok ? { ...state, ledger: healthy } : { ...state, ledger: failed(state.ledger, 'error', at), ready: false };
}

/** Applies one disk sample (issue 26): a full directory withdraws at once; room again lets the round restore. */
export function observeDisk(state: ReadinessState, fullPath: string | null): ReadinessState {
  return { ...state, diskFull: fullPath, ready: state.ready && fullPath === null };
}

/**
 * After every dependency of a round has reported: readiness is established (rule 1) or restored
 * (rule 8, 10) only when every dependency's last sample is healthy and startup has the poller
 * proof. A cancelled engine is not healthy, so cancellation never establishes or restores it.
 */
export function concludeRound(state: ReadinessState): ReadinessState {
  if (state.ready || !state.pollerProof || state.queueShared || state.diskFull !== null || state.engine.health !== 'ok' || state.ledger.health !== 'ok') return state;
  return { ...state, ready: true, started: true };
}

/**
 * When readiness held through a cancellation sequence must go (rule 9): the grace boundary of
 * the sequence's window, or undefined when no such sequence is running.
 */
export function graceDeadline(state: ReadinessState): number | undefined {
  if (!state.ready || state.engine.health !== 'cancelled' || state.engine.windowStart === undefined) return undefined;
  return state.engine.windowStart + READINESS_GRACE_MS;
}

/** At the grace boundary of an uninterrupted cancellation sequence, readiness is withdrawn (rule 9). */
export function expireGrace(state: ReadinessState, now: number): ReadinessState {
  const deadline = graceDeadline(state);
  return deadline !== undefined && now >= deadline ? { ...state, ready: false } : state;
}

/** The configuration field a not-ready reason points at (shown beside it by `/readyz` and `stack status`). */
export const READINESS_REASON_FIELDS: Readonly<Partial<Record<string, string>>> = {
  task_queue_shared: 'workflow_engine.task_queue',
};

/**
 * The not-ready reasons that say the workflow engine does not answer (an error, or RPCs kept
 * cancelled past the grace): `/readyz` names the engine's address beside them, and a client
 * following an execution tells its operator the execution waits for the engine.
 */
export const ENGINE_UNREACHABLE_REASONS: ReadonlySet<string> = new Set(['workflow_engine_unavailable', 'workflow_engine_cancelled']);

/**
 * What a not-ready reason says of the workflow engine (notReadyReason's order): it does not
 * answer; it answers (`task_queue_shared` and `workflow_engine_no_poller` come from an engine
 * that answered); or it does not tell — a full disk, a start or a shutdown is shown before the
 * engine's state, and `ledger_unavailable` also while the engine was not sampled yet.
 */
export function engineStateOf(reason: string): 'unreachable' | 'answers' | 'unknown' {
  if (ENGINE_UNREACHABLE_REASONS.has(reason)) return 'unreachable';
  if (reason === 'task_queue_shared' || reason === 'workflow_engine_no_poller') return 'answers';
  return 'unknown';
}

/**
 * Why the executor is not ready, as `/readyz` shows it: a full disk first (nothing else can be
 * fixed while nothing can be written, and waiting does not fix it), then the workflow engine (it
 * is what admission schedules on), then the ledger, then a missing startup proof.
 */
export function notReadyReason(state: ReadinessState): string {
  if (state.diskFull !== null) return 'disk_full';
  if (state.engine.health === 'error') return 'workflow_engine_unavailable';
  if (state.engine.health === 'cancelled') return 'workflow_engine_cancelled';
  if (state.engine.health === 'ok' && state.queueShared) return 'task_queue_shared';
  if (state.ledger.health === 'error') return 'ledger_unavailable';
  if (state.engine.health === 'ok' && !state.pollerProof) return 'workflow_engine_no_poller';
  return 'starting';
}
