import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { probeComponent, type ProbeTarget } from '../../process/loopback-probe.js';
import { terminateProcess } from '../../process/process-identity.js';
import { nextStreak, restartDelayMs } from '../../process/restart-policy.js';
import { openRotatingLog, type RotatingLog } from '../../process/rotating-log.js';
import { generationDir } from '../generations/generation-store.js';
import { generationComponents, type GenerationManifest, type StackComponent } from '../generations/render-generation.js';
import type { ProfilePaths } from '../home/stack-home.js';
import { liveTemporalChild } from './stack-processes.js';
import { spawnSupervisedChild, type ChildExit, type SupervisedChild } from './supervised-child.js';
import type { ComponentStatus } from './supervisor-state.js';

/*
 * The supervisor's children (docs/stack-runtime.md): one slot per component of the generation,
 * each with its arguments, its rotating log and its published status. A child is spawned, probed
 * until ready, restarted after an exit of its own (src/process/restart-policy.ts) and, when the
 * stack stops, stopped in reverse start order. The supervisor (stack-supervisor.ts) says when to
 * start which child and publishes every status change this module reports.
 */

/** How often a starting child is probed. */
const PROBE_INTERVAL_MS = 150;
const PROBE_TIMEOUT_MS = 1_000;
/**
 * SIGTERM → SIGKILL bound per child. The executor drains running work for up to 10 s, then stops
 * its managed Temporal server (2-3 s, at most 8 s).
 */
const STOP_GRACE_MS: Readonly<Record<StackComponent, number>> = { executor: 20_000, sandbox: 5_000, ledger: 10_000 };
/** SIGTERM → SIGKILL bound for a Temporal server an executor left behind. */
const TEMPORAL_ORPHAN_GRACE_MS = 8_000;

/** The supervisor's own log line: an event name, its fields, a level. */
export type SupervisorEvent = (event: string, fields?: Record<string, unknown>, level?: 'info' | 'warn' | 'error') => void;

export interface Slot {
  readonly component: StackComponent;
  readonly args: readonly string[];
  readonly log: RotatingLog;
  status: ComponentStatus;
  child: SupervisedChild | null;
  /** Monotonic spawn time of the current child: uptime must not follow wall-clock steps. */
  spawnedAt: number;
  streak: number;
  restartTimer: NodeJS.Timeout | null;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const now = () => new Date().toISOString();

/** Each component's `service`, as its own log lines name it. */
const SERVICE_NAMES: Record<StackComponent, string> = { ledger: 'ledger', executor: 'executor', sandbox: 'sandbox-provider' };

/** The sandbox's jobs file in the profile's state: a stop and start of the stack keeps its queue requests. */
export const SANDBOX_JOBS_FILE = 'sandbox-jobs.jsonl';
/** The sandbox's log of every submission it received (job or not): what reached the provider. */
export const SANDBOX_SUBMISSIONS_FILE = 'sandbox-submissions.jsonl';

function childArgs(component: StackComponent, manifest: GenerationManifest, dir: string, stateDir: string): string[] {
  if (component === 'ledger') return ['ledger', 'serve', '--config', join(dir, 'ledger.json')];
  if (component === 'executor') return ['executor', 'serve', '--config', join(dir, 'executor.json')];
  const sandbox = manifest.components.sandbox;
  return [
    'provider',
    'sandbox',
    'serve',
    '--port',
    String(sandbox?.port ?? 0),
    '--complete-after-ms',
    String(sandbox?.complete_after_ms ?? 300),
    '--jobs-file',
    join(stateDir, SANDBOX_JOBS_FILE),
    '--submissions-log',
    join(stateDir, SANDBOX_SUBMISSIONS_FILE),
  ];
}

function initialStatus(port: number): ComponentStatus {
  return { state: 'stopped', pid: null, pid_start_ticks: null, port, started_at: null, ready_at: null, restarts: 0, last_exit: null, probe_error: null };
}

export class SupervisedChildren {
  private readonly slots = new Map<StackComponent, Slot>();
  private readonly spawning = new Set<Promise<void>>();
  /** Components probed elsewhere than plain 127.0.0.1 (a ledger with `[ledger.http]`). */
  private readonly probeTargets = new Map<StackComponent, ProbeTarget>();

  constructor(
    private readonly paths: ProfilePaths,
    manifest: GenerationManifest,
    private readonly owner: {
      readonly env: NodeJS.ProcessEnv;
      readonly event: SupervisorEvent;
      /** Publishes the supervisor's state (every status change here is published). */
      readonly publish: () => Promise<void>;
      /** Whether the stack has begun to stop: nothing is started or restarted from then on. */
      readonly stopping: () => boolean;
    },
  ) {
    const dir = generationDir(paths, manifest.generation_id);
    for (const component of generationComponents(manifest)) {
      const port = manifest.components[component]?.port ?? 0;
      this.slots.set(component, {
        component,
        args: childArgs(component, manifest, dir, paths.stateDir),
        log: openRotatingLog({ logsDir: paths.logsDir, component }),
        status: initialStatus(port),
        child: null,
        spawnedAt: 0,
        streak: 0,
        restartTimer: null,
      });
    }
  }

  /** Probes `component` at `target` from now on (set before it is started). */
  probeAt(component: StackComponent, target: ProbeTarget): void {
    this.probeTargets.set(component, target);
  }

  /** The slots, in start order. */
  all(): Slot[] {
    return [...this.slots.values()];
  }

  slot(component: StackComponent): Slot {
    const slot = this.slots.get(component);
    if (slot === undefined) throw new Error(`generation has no ${component}`);
    return slot;
  }

  /** Each component's status, in start order, as supervisor.json publishes it. */
  statuses(): Record<string, ComponentStatus> {
    return Object.fromEntries(this.all().map((slot) => [slot.component, slot.status]));
  }

  closeLogs(): void {
    for (const slot of this.slots.values()) slot.log.close();
  }

  /** Starts a child; tracked, so a stop that begins meanwhile waits for it and then stops it too. */
  startChild(slot: Slot): Promise<void> {
    if (this.owner.stopping()) return Promise.resolve();
    const spawning = this.spawnInto(slot);
    this.spawning.add(spawning);
    return spawning.finally(() => this.spawning.delete(spawning));
  }

  private async spawnInto(slot: Slot): Promise<void> {
    const child = await spawnSupervisedChild({
      args: slot.args,
      log: slot.log,
      service: SERVICE_NAMES[slot.component],
      env: this.owner.env,
      cwd: this.paths.dir,
      stopGraceMs: STOP_GRACE_MS[slot.component],
    });
    slot.child = child;
    slot.spawnedAt = performance.now();
    slot.status = { ...slot.status, state: 'starting', pid: child.pid, pid_start_ticks: child.startTicks, started_at: now(), ready_at: null, probe_error: null };
    this.owner.event('child_started', { component: slot.component, child_pid: child.pid, restarts: slot.status.restarts });
    await this.owner.publish();
    void child.exited.then((exit) => this.onExit(slot, child, exit));
    void this.probeUntilReady(slot, child);
  }

  /** Probes a starting child until it is ready, exits, or the stack stops. */
  private async probeUntilReady(slot: Slot, child: SupervisedChild): Promise<void> {
    const spawnedAt = performance.now();
    while (this.stillStarting(slot, child)) {
      const result = await probeComponent(slot.component, slot.status.port, PROBE_TIMEOUT_MS, this.probeTargets.get(slot.component));
      // The child may have exited, or the stack begun to stop, while the probe was out.
      if (!this.stillStarting(slot, child)) return;
      if (result.ok) {
        slot.status = { ...slot.status, state: 'running', ready_at: now(), probe_error: null };
        this.owner.event('child_ready', { component: slot.component, child_pid: child.pid, after_ms: Math.round(performance.now() - spawnedAt) });
        await this.owner.publish();
        return;
      }
      if (slot.status.probe_error !== result.error) {
        slot.status = { ...slot.status, probe_error: result.error };
        await this.owner.publish();
      }
      await sleep(PROBE_INTERVAL_MS);
    }
  }

  private stillStarting(slot: Slot, child: SupervisedChild): boolean {
    return !this.owner.stopping() && slot.child === child && slot.status.state === 'starting';
  }

  /** Resolves when the slot is running; keeps waiting across restarts; returns at once when stopping. */
  async untilReady(slot: Slot): Promise<void> {
    while (!this.owner.stopping() && slot.status.state !== 'running') await sleep(50);
  }

  private async onExit(slot: Slot, child: SupervisedChild, exit: ChildExit): Promise<void> {
    if (slot.child !== child) return;
    slot.child = null;
    const lastExit = { code: exit.code, signal: exit.signal, at: now() };
    const uptimeMs = Math.round(performance.now() - slot.spawnedAt);
    if (this.owner.stopping()) {
      slot.status = { ...slot.status, state: 'stopped', pid: null, pid_start_ticks: null, last_exit: lastExit, probe_error: null };
      if (exit.signal === 'SIGKILL') {
        // It did not stop within its bound after SIGTERM (a hung process): what it was doing was cut short.
        this.owner.event('child_killed', { component: slot.component, child_pid: child.pid, after_ms: STOP_GRACE_MS[slot.component] }, 'warn');
      } else this.owner.event('child_stopped', { component: slot.component, child_pid: child.pid, code: exit.code, signal: exit.signal });
      await this.owner.publish();
      return;
    }
    slot.streak = nextStreak(slot.streak, uptimeMs);
    const delayMs = restartDelayMs(slot.streak - 1);
    slot.status = { ...slot.status, state: 'restarting', pid: null, pid_start_ticks: null, last_exit: lastExit, probe_error: null };
    this.owner.event('child_exited', { component: slot.component, child_pid: child.pid, code: exit.code, signal: exit.signal, uptime_ms: uptimeMs, restart_in_ms: delayMs }, 'warn');
    await this.owner.publish();
    slot.restartTimer = setTimeout(() => {
      slot.restartTimer = null;
      if (this.owner.stopping()) return;
      slot.status = { ...slot.status, restarts: slot.status.restarts + 1 };
      void this.startChild(slot).catch((error: unknown) => {
        this.owner.event('child_restart_failed', { component: slot.component, error: error instanceof Error ? error.name : 'unknown' }, 'error');
      });
    }, delayMs);
  }

  /** Reverse start order: executor and sandbox (together), then the ledger. */
  async stopAll(): Promise<void> {
    for (const slot of this.slots.values()) {
      if (slot.restartTimer !== null) clearTimeout(slot.restartTimer);
      slot.restartTimer = null;
    }
    await Promise.allSettled([...this.spawning]);
    const stop = async (slot: Slot) => {
      const child = slot.child;
      if (child === null) {
        slot.status = { ...slot.status, state: 'stopped', pid: null, pid_start_ticks: null, probe_error: null };
        return;
      }
      await child.stop();
      // onExit records the exit; wait for it so the published state is final.
      while (slot.child === child) await sleep(10);
    };
    await Promise.all(this.all().filter((slot) => slot.component !== 'ledger').map(stop));
    // An executor stopped only by SIGKILL (past its bound) could not stop its Temporal server.
    const temporal = await liveTemporalChild(this.paths);
    if (temporal !== null) {
      this.owner.event('temporal_orphan_stopped', { child_pid: temporal.pid, outcome: await terminateProcess(temporal.pid, temporal.startTicks, TEMPORAL_ORPHAN_GRACE_MS) }, 'warn');
    }
    const ledger = this.slots.get('ledger');
    if (ledger !== undefined) await stop(ledger);
  }
}
