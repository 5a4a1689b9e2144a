import { spawn } from 'node:child_process';
import { mkdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { WorkflowEngineConfig } from '../../config/executor-config-schema.js';
import { BugError, errorCode, UserError } from '../../../errors.js';
import { processStartTicks, terminateProcess } from '../../../process/process-identity.js';
import { nextStreak, restartDelayMs } from '../../../process/restart-policy.js';
import { createLineSplitter, openRotatingLog, type RotatingLog } from '../../../process/rotating-log.js';
import { probeGrpcHealth } from './grpc-health-probe.js';
import { checkTemporalCli, ensurePortFree, reapOrphanTemporalServer } from './managed-temporal-preflight.js';
import { MANAGED_TEMPORAL_STATE_VERSION, writeManagedTemporalState, type ManagedTemporalState } from './managed-temporal-state.js';
import { prepareTemporalDatabase, temporalDatabasePath, temporalDatabaseServed } from './temporal-database.js';
import type { EngineLogger } from './temporal-engine.js';

/*
 * The Temporal dev server of managed_local mode (spec §1 "Workflow-engine settings"; §8
 * operations rule 1): the executor spawns the pinned `temporal server start-dev` on loopback with
 * its database in data_dir, writes its output to a bounded rotating log, restarts it with the
 * stack's capped backoff when it exits on its own (during its start too), and at shutdown stops
 * that child and nothing else. What it does is published in `<data_dir>/server.json`
 * (managed-temporal-state.ts).
 */

/** Bound of one start, all its attempts: spawn until the frontend reports SERVING (the dev server needs 0.5–3 s). */
export const READY_TIMEOUT_MS = 30_000;
/**
 * Children one start spawns at most, within its bound: one killed or crashed before it served is
 * spawned again after the crash streak's delay (0.5, 1, 2 s), as after the start, so a passing
 * fault costs a second or two instead of the executor's exit; one that never serves fails the start.
 */
export const START_ATTEMPTS = 4;
const PROBE_INTERVAL_MS = 100;
const PROBE_TIMEOUT_MS = 1_000;
/** How long an orphan, or a child that never became ready, gets after SIGTERM before SIGKILL. */
const FORCED_STOP_GRACE_MS = 10_000;

export type ManagedTemporalStatus = ManagedTemporalState;

export interface ManagedTemporalServerOptions {
  /** Absolute path of the pinned Temporal CLI. */
  readonly cliPath: string;
  readonly pinnedVersion: string;
  readonly dataDir: string;
  readonly logDir: string;
  readonly port: number;
  readonly uiPort: number;
  readonly namespace: string;
  readonly logger: EngineLogger;
  readonly readyTimeoutMs?: number;
  /** The wall clock for published timestamps. */
  readonly now?: () => Date;
  /** Told when the child's state changes (e.g. it exited and is `restarting`): readiness samples at once. */
  readonly onStateChange?: (state: ManagedTemporalState['state']) => void;
}

export interface ManagedTemporalServer {
  /** Checks, reaps an orphan, spawns (again after an early exit), and resolves once the server serves; a UserError says why not. */
  start(): Promise<void>;
  /** No restarts after; SIGTERM, then SIGKILL after `graceMs`. */
  stop(graceMs: number): Promise<'stopped' | 'killed' | 'not_running'>;
  status(): ManagedTemporalStatus;
  /** `127.0.0.1:<port>` */
  readonly address: string;
  /** `http://127.0.0.1:<ui_port>` */
  readonly uiUrl: string;
}

interface ChildExit {
  readonly code: number | null;
  readonly signal: string | null;
}

interface Child {
  readonly pid: number | null;
  readonly startTicks: number | null;
  readonly spawnedAt: number;
  exit: ChildExit | null;
  readonly exited: Promise<ChildExit>;
}

/** The options a managed_local configuration gives; the engine's output goes to data_dir unless log_dir says otherwise. */
export function managedTemporalSettings(
  engine: Extract<WorkflowEngineConfig, { mode: 'managed_local' }>,
): Omit<ManagedTemporalServerOptions, 'logger' | 'readyTimeoutMs' | 'now'> {
  const { temporal_cli: cli, data_dir: dataDir } = engine;
  return { cliPath: cli.path, pinnedVersion: cli.version, dataDir, logDir: engine.log_dir ?? dataDir, port: engine.port, uiPort: engine.ui_port, namespace: engine.namespace };
}

/**
 * WAL journal with synchronous=NORMAL: a commit no longer waits for its own fsync (a power loss may
 * lose the last moments of history, never corrupt it). That is safe here because the engine holds
 * no truth: every decision is read from the executor's database (synchronous=FULL), and at start
 * every non-terminal execution is scheduled again at its stable workflow id, so a workflow whose
 * start or last steps were lost is started again and decides from that truth. Eager activity
 * dispatch hands an activity to the worker in the reply to the workflow task that scheduled it,
 * saving a round trip through the task queue per phase.
 */
const PERFORMANCE_FLAGS = [
  ...['--sqlite-pragma', 'journal_mode=wal', '--sqlite-pragma', 'synchronous=normal'],
  ...['--dynamic-config-value', 'system.enableActivityEagerExecution=true'],
];

/** Loopback only, the database in data_dir, JSON logs, and no settings from TEMPORAL_* variables or config files. */
export function temporalServerArgs(options: Pick<ManagedTemporalServerOptions, 'port' | 'uiPort' | 'dataDir' | 'namespace'>): string[] {
  return [
    ...['server', 'start-dev', '--ip', '127.0.0.1', '--port', String(options.port)],
    ...['--ui-ip', '127.0.0.1', '--ui-port', String(options.uiPort), '--db-filename', temporalDatabasePath(options.dataDir)],
    // The CLI creates "default" itself, always (it prepends it to the --namespace list).
    ...(options.namespace === 'default' ? [] : ['--namespace', options.namespace]),
    ...['--log-format', 'json', '--log-level', 'warn', '--disable-config-env', '--disable-config-file'],
    ...PERFORMANCE_FLAGS,
  ];
}

/**
 * HOME is data_dir on purpose: the CLI still reads the legacy `$HOME/.config/temporalio/temporal.yaml`
 * despite --disable-config-*, and its values become flag defaults (an operator's `headless: true`
 * there turns the UI off). The server needs nothing else from the executor's environment.
 */
function serverEnvironment(dataDir: string): NodeJS.ProcessEnv {
  return { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: dataDir, TMPDIR: tmpdir() };
}

export function createManagedTemporalServer(options: ManagedTemporalServerOptions): ManagedTemporalServer {
  const { logger, dataDir } = options;
  const address = `127.0.0.1:${options.port}`;
  const uiUrl = `http://127.0.0.1:${options.uiPort}`;
  const readyTimeoutMs = options.readyTimeoutMs ?? READY_TIMEOUT_MS;
  const now = () => (options.now ?? (() => new Date()))().toISOString();
  let state: ManagedTemporalState = {
    ...{ state_version: MANAGED_TEMPORAL_STATE_VERSION, executor_pid: process.pid, executor_pid_start_ticks: null, pid: null, pid_start_ticks: null },
    ...{ state: 'stopped', address, ui_url: uiUrl, restarts: 0, started_at: null, last_exit: null },
  };
  let log: RotatingLog | null = null;
  let child: Child | null = null;
  let phase: 'new' | 'starting' | 'supervising' | 'stopping' | 'stopped' = 'new';
  /** Whether server.json was written by this instance (stop() then records the stop there too). */
  let published = false;
  let streak = 0;
  let restartTimer: NodeJS.Timeout | null = null;
  let restarting: Promise<void> | null = null;
  /** Ends the start's wait before its next attempt (stop() wins over it). */
  let wakeStart: (() => void) | null = null;

  /** Publishes a change; a failed write is logged, never thrown into exit handlers and timers. */
  function publish(change: Partial<ManagedTemporalState>): void {
    const before = state.state;
    state = { ...state, ...change };
    if (state.state !== before) options.onStateChange?.(state.state);
    try {
      writeManagedTemporalState(dataDir, state);
      published = true;
    } catch (error) {
      logger.error({ event: 'temporal_state_write_failed', error: errorCode(error) ?? 'unknown' });
    }
  }

  function writeToLog(line: string): void {
    try {
      log?.writeLine(line);
    } catch {
      // An unwritable log (disk full) loses the line; the server keeps running.
    }
  }

  async function spawnChild(during: 'starting' | 'restarting'): Promise<Child> {
    // Its own process group: a Ctrl-C in the executor's terminal reaches the executor, which drains
    // its worker first and only then stops this child (spec §8 Operations 1).
    prepareTemporalDatabase(dataDir, logger);
    const spawned = spawn(options.cliPath, temporalServerArgs(options), { cwd: dataDir, env: serverEnvironment(dataDir), stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    const drained = [spawned.stdout, spawned.stderr].map((stream) => {
      const splitter = createLineSplitter(writeToLog);
      stream.setEncoding('utf8');
      stream.on('data', (chunk: string) => {
        splitter.push(chunk);
      });
      return new Promise<void>((resolve) => stream.once('close', resolve)).then(() => {
        splitter.flush();
      });
    });
    const exited = new Promise<ChildExit>((resolve) => {
      spawned.once('exit', (code, signal) => {
        resolve({ code, signal });
      });
      // Not even spawned (the binary vanished since the check): reported like any other exit.
      spawned.once('error', () => {
        resolve({ code: null, signal: null });
      });
    }).then(async (exit) => {
      // Its last lines (the reason it failed) arrive just after the exit.
      await Promise.race([Promise.all(drained), sleep(1_000)]);
      return exit;
    });
    const pid = spawned.pid ?? null;
    const started: Child = { pid, startTicks: pid === null ? null : await processStartTicks(pid), spawnedAt: performance.now(), exit: null, exited };
    child = started;
    void exited.then((exit) => {
      started.exit = exit;
      onExit(started, exit);
    });
    publish({ state: during, pid, pid_start_ticks: started.startTicks, started_at: now() });
    logger.info({ event: 'temporal_server_spawned', pid, address, ui_url: uiUrl, restarts: state.restarts });
    return started;
  }

  /** Probes until the frontend serves; or the child exits, the deadline passes, or a stop begins. */
  async function untilServing(running: Child, deadline: number): Promise<'serving' | 'exited' | 'timed_out' | 'stopping'> {
    // A function, so the check is read afresh after each await (the exit handler sets it).
    const alive = () => running.exit === null;
    for (;;) {
      if (!alive()) return 'exited';
      if (isStopping()) return 'stopping';
      if (performance.now() >= deadline) return 'timed_out';
      const probe = await probeGrpcHealth(options.port, PROBE_TIMEOUT_MS);
      // Serving counts only while our child lives: nothing else may answer on its port.
      if (probe.serving && alive()) return 'serving';
      await sleep(PROBE_INTERVAL_MS);
    }
  }

  function onExit(exited: Child, exit: ChildExit): void {
    if (child !== exited) return;
    child = null;
    const lastExit = { code: exit.code, signal: exit.signal, at: now() };
    const uptimeMs = Math.round(performance.now() - exited.spawnedAt);
    if (phase !== 'supervising') {
      // Stopping, or starting: stop() / start() publish what comes next (another attempt, or the outcome).
      publish({ pid: null, pid_start_ticks: null, last_exit: lastExit });
      return;
    }
    streak = nextStreak(streak, uptimeMs);
    publish({ state: 'restarting', pid: null, pid_start_ticks: null, last_exit: lastExit });
    const delayMs = scheduleRestart();
    logger.warn({ event: 'temporal_server_exited', pid: exited.pid, code: exit.code, signal: exit.signal, uptime_ms: uptimeMs, restart_in_ms: delayMs });
  }

  /** The next attempt after the crash streak's delay; returns the delay. */
  function scheduleRestart(): number {
    const delayMs = restartDelayMs(streak - 1);
    restartTimer = setTimeout(() => {
      restartTimer = null;
      restarting = restart()
        .catch((error: unknown) => {
          // The spawn itself threw: counted as one more crash, so attempts go on with a growing delay.
          logger.error({ event: 'temporal_server_restart_failed', error_name: error instanceof Error ? error.name : 'unknown', error_code: errorCode(error) ?? null });
          streak += 1;
          if (phase === 'supervising') scheduleRestart();
        })
        .finally(() => {
          restarting = null;
        });
    }, delayMs);
    return delayMs;
  }

  async function restart(): Promise<void> {
    if (phase !== 'supervising') return;
    publish({ restarts: state.restarts + 1 });
    const running = await spawnChild('restarting');
    const outcome = await untilServing(running, performance.now() + readyTimeoutMs);
    if (outcome === 'serving') {
      temporalDatabaseServed(dataDir);
      publish({ state: 'running' });
      logger.info({ event: 'temporal_server_restarted', pid: running.pid, restarts: state.restarts });
    } else if (outcome === 'timed_out') {
      // Alive but not serving: stop it; its exit schedules the next attempt with a longer delay.
      logger.error({ event: 'temporal_server_not_ready', pid: running.pid, after_ms: readyTimeoutMs });
      await stopChild(running, FORCED_STOP_GRACE_MS);
    }
    // 'exited': onExit has scheduled the next attempt. 'stopping': stop() takes the child.
  }

  /** SIGTERM, SIGKILL after `graceMs` (only ever to this child, identified by pid and start time). */
  async function stopChild(running: Child, graceMs: number): Promise<'stopped' | 'killed'> {
    if (running.pid === null) {
      await running.exited;
      return 'stopped';
    }
    const outcome = await terminateProcess(running.pid, running.startTicks, graceMs);
    if (outcome !== 'stuck') await running.exited;
    return outcome === 'killed' || outcome === 'stuck' ? 'killed' : 'stopped';
  }

  /** Everything before the spawn; any refusal leaves nothing running and nothing written. */
  async function preflight(): Promise<void> {
    await checkTemporalCli(options.cliPath, options.pinnedVersion);
    await mkdir(dataDir, { recursive: true, mode: 0o700 });
    await mkdir(options.logDir, { recursive: true, mode: 0o700 });
    await reapOrphanTemporalServer(dataDir, logger, FORCED_STOP_GRACE_MS, [options.port, options.uiPort]);
    await ensurePortFree(options.port, 'workflow_engine.port');
    await ensurePortFree(options.uiPort, 'workflow_engine.ui_port');
    state = { ...state, executor_pid_start_ticks: await processStartTicks(process.pid) };
  }

  async function start(): Promise<void> {
    if (phase !== 'new') throw new BugError('a managed Temporal server is started once');
    phase = 'starting';
    try {
      await preflight();
    } catch (error) {
      phase = 'stopped';
      throw error;
    }
    // A stop() that came during the checks: nothing was spawned, nothing is to be.
    if (isStopping()) throw startFailed('was stopped while starting');
    log = openRotatingLog({ logsDir: options.logDir, component: 'temporal' });
    const spawnedAt = performance.now();
    const deadline = spawnedAt + readyTimeoutMs;
    for (let attempt = 1; ; attempt += 1) {
      const running = await spawnChild(attempt === 1 ? 'starting' : 'restarting');
      const outcome = await untilServing(running, deadline);
      if (outcome === 'serving') {
        temporalDatabaseServed(dataDir);
        phase = 'supervising';
        publish({ state: 'running' });
        logger.info({ event: 'temporal_server_started', pid: running.pid, address, ui_url: uiUrl, restarts: state.restarts, after_ms: Math.round(performance.now() - spawnedAt) });
        return;
      }
      if (outcome === 'exited' && !isStopping() && (await againAfterExit(running, attempt, deadline))) continue;
      // stop() owns the child and the state file once it has begun.
      if (isStopping()) throw startFailed('was stopped while starting');
      if (outcome === 'timed_out') await stopChild(running, FORCED_STOP_GRACE_MS);
      phase = 'stopped';
      publish({ state: 'stopped', pid: null, pid_start_ticks: null });
      log.close();
      throw startFailed(outcome === 'exited' ? exitedBeforeServing(running.exit, attempt, performance.now() - spawnedAt) : `did not serve within ${readyTimeoutMs} ms`);
    }
  }

  /**
   * A child of the start exited before it served: after the crash streak's delay another is
   * spawned, as after the start — unless this was the last attempt, the delay would pass the
   * start's bound, or a stop() begins meanwhile (then false).
   */
  async function againAfterExit(exited: Child, attempt: number, deadline: number): Promise<boolean> {
    const uptimeMs = Math.round(performance.now() - exited.spawnedAt);
    streak = nextStreak(streak, uptimeMs);
    const delayMs = restartDelayMs(streak - 1);
    if (attempt >= START_ATTEMPTS || performance.now() + delayMs >= deadline) return false;
    publish({ state: 'restarting' });
    const { code, signal } = exited.exit ?? { code: null, signal: null };
    logger.warn({ event: 'temporal_server_exited', pid: exited.pid, code, signal, uptime_ms: uptimeMs, restart_in_ms: delayMs, while_starting: true, attempt });
    if (isStopping()) return false;
    await new Promise<void>((resolve) => {
      wakeStart = resolve;
      restartTimer = setTimeout(resolve, delayMs);
    });
    restartTimer = null;
    wakeStart = null;
    if (isStopping()) return false;
    publish({ restarts: state.restarts + 1 });
    return true;
  }

  /** Whether stop() has begun. A function: TypeScript would otherwise narrow `phase` across awaits. */
  function isStopping(): boolean {
    return phase === 'stopping' || phase === 'stopped';
  }

  function startFailed(why: string): UserError {
    return new UserError('temporal_server_start_failed', `The managed Temporal dev server on ${address} ${why}.`, {
      nextStep: `Read ${join(options.logDir, 'temporal.log')} for the reason, fix it, then start again.`,
    });
  }

  async function stop(graceMs: number): Promise<'stopped' | 'killed' | 'not_running'> {
    if (phase === 'new' || phase === 'stopped') {
      phase = 'stopped';
      return 'not_running';
    }
    phase = 'stopping';
    if (restartTimer !== null) clearTimeout(restartTimer);
    restartTimer = null;
    wakeStart?.();
    await restarting;
    const running = child;
    const outcome = running === null ? 'not_running' : await stopChild(running, graceMs);
    phase = 'stopped';
    if (published) publish({ state: 'stopped', pid: null, pid_start_ticks: null });
    logger.info({ event: 'temporal_server_stopped', pid: running?.pid ?? null, outcome });
    log?.close();
    return outcome;
  }

  return { start, stop, status: () => state, address, uiUrl };
}

/** "exited before it served (exit code 1)"; after restarts, how many children and how long. */
function exitedBeforeServing(exit: ChildExit | null, attempts: number, elapsedMs: number): string {
  const last = describeExit(exit);
  return attempts === 1 ? `exited before it served (${last})` : `exited before it served, ${attempts} times in ${(elapsedMs / 1_000).toFixed(1)} s (the last: ${last})`;
}

function describeExit(exit: ChildExit | null): string {
  if (exit === null) return 'unknown';
  if (exit.signal !== null) return `signal ${exit.signal}`;
  return exit.code === null ? 'could not be run' : `exit code ${exit.code}`;
}
