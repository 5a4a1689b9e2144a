import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { errorCode, UserError } from '../../errors.js';
import { restrictProcessUmask } from '../../storage/private-state.js';
import { generationDir } from '../generations/generation-store.js';
import { probeComponent } from '../../process/loopback-probe.js';
import { processStartTicks, terminateProcess } from '../../process/process-identity.js';
import { liveTemporalChild } from './stack-processes.js';
import { loadProfile, resolveProfileName } from '../profiles/profile-store.js';
import { generationComponents, type GenerationManifest, type StackComponent } from '../generations/render-generation.js';
import { nextStreak, restartDelayMs } from '../../process/restart-policy.js';
import { openRotatingLog, type RotatingLog } from '../../process/rotating-log.js';
import { lexecHome, profilePaths, type ProfilePaths } from '../home/stack-home.js';
import { acquireSupervisorLock } from '../home/stack-locks.js';
import { spawnSupervisedChild, type ChildExit, type SupervisedChild } from './supervised-child.js';
import {
  SUPERVISOR_STATE_VERSION,
  writeSupervisorState,
  type ComponentStatus,
  type SupervisorFailure,
  type SupervisorPhase,
  type SupervisorState,
} from './supervisor-state.js';
import { activeManifest } from '../generations/stack-generations.js';
import { readHandoff, stackHandoff, withdrawHandoff, writeHandoff } from '../handoff/handoff.js';

/*
 * The per-profile supervisor (`lexec stack supervise`, hidden; docs/stack-runtime.md). Started
 * detached by `stack start`, it owns the stack from then on: it holds the supervisor lock,
 * starts the children in order — ledger, wait for /health; credential bootstrap and the local
 * agent and approver credentials (in this process: nothing else needs to run for a restart);
 * executor and sandbox provider, wait for /readyz — writes their output to the rotating logs,
 * restarts a child that exits on its own (src/process/restart-policy.ts), publishes everything in
 * state/supervisor.json, and on SIGTERM or SIGINT stops the children in reverse order.
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
/** Ledger refusals during bootstrap that waiting can cure (the ledger restarting); anything else stops the stack. */
const TRANSIENT_CODES = new Set(['ledger_unreachable', 'ledger_server_error']);

export interface SupervisorStopped {
  readonly status: 'stopped';
  readonly signal: string | null;
}

interface Slot {
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

/** The supervisor's own JSON log lines, in the shape pino gives the servers' lines. */
function eventLogger(log: RotatingLog) {
  return (event: string, fields: Record<string, unknown> = {}, level: 'info' | 'warn' | 'error' = 'info') => {
    try {
      log.writeLine(JSON.stringify({ level: { info: 30, warn: 40, error: 50 }[level], time: now(), service: 'supervisor', pid: process.pid, event, ...fields }));
    } catch {
      // An unwritable log must not stop the stack (see supervised-child.ts).
    }
  };
}

export async function superviseStack(request: { env: NodeJS.ProcessEnv; profileFlag: string | undefined }): Promise<SupervisorStopped> {
  // The stack's processes inherit it: nothing they create without an explicit mode is readable by others.
  restrictProcessUmask();
  const home = lexecHome(request.env);
  const paths = profilePaths(home, (await resolveProfileName(home, request.profileFlag)).name);
  const supervisorLog = openRotatingLog({ logsDir: paths.logsDir, component: 'supervisor' });
  const event = eventLogger(supervisorLog);
  let release: () => Promise<void>;
  try {
    release = await acquireSupervisorLock(paths);
  } catch (error) {
    // Said in the log: this process has no terminal, and `stack start` reads the log when it exits.
    event('supervisor_refused', { code: error instanceof UserError ? error.code : 'internal_error' }, 'error');
    supervisorLog.close();
    throw error;
  }
  try {
    const manifest = await activeManifest(paths);
    if (manifest === null) {
      throw new UserError('no_active_generation', `Profile "${paths.name}" has no active generation.`, { nextStep: 'Run `lexec stack start`: it renders and activates one.' });
    }
    // The agent's name is the one thing of the profile that is not rendered into the generation.
    const { profile } = await loadProfile(home, paths.name);
    return await new Supervisor(paths, manifest, { env: request.env, agentName: profile.agent.name, event }).run();
  } catch (error) {
    event('supervisor_failed', { code: error instanceof UserError ? error.code : 'internal_error', message: error instanceof UserError ? error.message : 'unexpected error' }, 'error');
    throw error;
  } finally {
    supervisorLog.close();
    await release();
  }
}

class Supervisor {
  private readonly slots = new Map<StackComponent, Slot>();
  private phase: SupervisorPhase = 'starting';
  private step: string | null = 'ledger';
  private failure: SupervisorFailure | null = null;
  private agent: SupervisorState['agent'] = null;
  private readonly startedAt = now();
  private startTicks: number | null = null;
  private stopping = false;
  private stopSignal: string | null = null;
  private requestStop: () => void = () => undefined;
  private readonly stopRequested = new Promise<void>((resolve) => {
    this.requestStop = resolve;
  });
  private writing: Promise<void> = Promise.resolve();
  private readonly spawning = new Set<Promise<void>>();

  private readonly env: NodeJS.ProcessEnv;
  private readonly agentName: string;
  private readonly event: ReturnType<typeof eventLogger>;

  constructor(
    private readonly paths: ProfilePaths,
    private readonly manifest: GenerationManifest,
    options: { env: NodeJS.ProcessEnv; agentName: string; event: ReturnType<typeof eventLogger> },
  ) {
    this.env = options.env;
    this.agentName = options.agentName;
    this.event = options.event;
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

  async run(): Promise<SupervisorStopped> {
    this.startTicks = await processStartTicks(process.pid);
    const onSignal = (signal: NodeJS.Signals) => {
      if (this.stopping) return;
      this.stopping = true;
      this.stopSignal = signal;
      this.requestStop();
    };
    process.on('SIGTERM', onSignal);
    process.on('SIGINT', onSignal);
    // Detached, with no terminal: a hang-up is not a reason to stop the stack.
    process.on('SIGHUP', () => undefined);
    this.event('supervisor_started', { profile: this.paths.name, generation_id: this.manifest.generation_id, components: [...this.slots.keys()] });
    await this.publish();
    try {
      const sequence = this.startSequence();
      // Raced against a stop request: a sequence failing after the stop won must not go unhandled.
      sequence.catch(() => undefined);
      await Promise.race([sequence, this.stopRequested]);
      if (!this.stopping && this.failure === null) {
        this.phase = 'running';
        this.step = null;
        // The handoff is the supervisor's to write: a start whose terminal went away (Ctrl-C,
        // a closed pipe, a killed launcher) still ends with a usable stack.
        await writeHandoff(this.paths, stackHandoff(this.paths, this.snapshot(), new Date()));
        await this.publish();
        this.event('stack_ready', { generation_id: this.manifest.generation_id, handoff: 'written' });
        await this.stopRequested;
      }
    } catch (error) {
      if (!this.stopping) {
        this.failure = describeFailure(this.step ?? 'start', error);
        this.event('stack_start_failed', { step: this.failure.step, code: this.failure.code, message: this.failure.message }, 'error');
      }
    } finally {
      this.stopping = true;
      this.phase = 'stopping';
      await this.withdrawOwnHandoff();
      await this.publish();
      this.event('supervisor_stopping', { signal: this.stopSignal, failure: this.failure?.code ?? null });
      await this.stopAll();
      this.phase = this.failure === null ? 'stopped' : 'failed';
      await this.publish();
      this.event('supervisor_stopped', { signal: this.stopSignal });
      for (const slot of this.slots.values()) slot.log.close();
      process.removeListener('SIGTERM', onSignal);
      process.removeListener('SIGINT', onSignal);
    }
    if (this.failure !== null) {
      throw new UserError(this.failure.code, this.failure.message, { nextStep: this.failure.next_step });
    }
    return { status: 'stopped', signal: this.stopSignal };
  }

  /** Ledger → bootstrap → local credentials → executor and sandbox, each waited for. */
  private async startSequence(): Promise<void> {
    const ledger = this.slot('ledger');
    await this.startChild(ledger);
    await this.untilReady(ledger);
    const ledgerUrl = `http://127.0.0.1:${ledger.status.port}`;

    await this.setStep('credential bootstrap');
    const { bootstrapManagedCredentials } = await import('../../executor/bootstrap-managed-credentials.js');
    const bootstrap = await this.retryTransient(() =>
      bootstrapManagedCredentials({
        configPath: join(generationDir(this.paths, this.manifest.generation_id), 'executor.json'),
        adminCapabilityPath: this.paths.ledgerAdminCapability,
      }),
    );
    this.event('credentials_bootstrapped', {
      caller_capability: bootstrap.caller_capability,
      reconciliation_capability: bootstrap.reconciliation_capability,
      ledger_credential: bootstrap.ledger_credential,
    });

    await this.setStep('local agent and approver credentials');
    const { provisionLocalCredentials } = await import('../handoff/stack-local-credentials.js');
    const local = await this.retryTransient(() =>
      provisionLocalCredentials({
        ledgerUrl,
        adminCapabilityPath: this.paths.ledgerAdminCapability,
        agentName: this.agentName,
        agentCapabilityPath: this.paths.agentCapability,
        approverCapabilityPath: this.paths.approverCapability,
      }),
    );
    this.agent = local.agent;
    this.event('local_credentials_ready', {
      agent_name: local.agent.name,
      agent_id: local.agent.agent_id,
      agent: local.agent_outcome,
      agent_credential: local.agent_credential,
      approver_credential: local.approver_credential,
    });

    await this.setStep('executor');
    const rest = [...this.slots.values()].filter((slot) => slot.component !== 'ledger');
    for (const slot of rest) await this.startChild(slot);
    for (const slot of rest) await this.untilReady(slot);
  }

  private slot(component: StackComponent): Slot {
    const slot = this.slots.get(component);
    if (slot === undefined) throw new Error(`generation has no ${component}`);
    return slot;
  }

  private async setStep(step: string): Promise<void> {
    this.step = step;
    await this.publish();
  }

  /** Retries a ledger step with the restart backoff while the ledger is unreachable; stops on anything else. */
  private async retryTransient<T>(work: () => Promise<T>): Promise<T> {
    for (let attempt = 0; ; attempt += 1) {
      try {
        return await work();
      } catch (error) {
        if (this.stopping || !(error instanceof UserError) || !TRANSIENT_CODES.has(error.code)) throw error;
        this.event('step_retry', { step: this.step, code: error.code, attempt: attempt + 1 }, 'warn');
        await sleep(restartDelayMs(attempt));
      }
    }
  }

  /** Starts a child; tracked, so a stop that begins meanwhile waits for it and then stops it too. */
  private startChild(slot: Slot): Promise<void> {
    if (this.stopping) return Promise.resolve();
    const spawning = this.spawnInto(slot);
    this.spawning.add(spawning);
    return spawning.finally(() => this.spawning.delete(spawning));
  }

  private async spawnInto(slot: Slot): Promise<void> {
    const child = await spawnSupervisedChild({
      args: slot.args,
      log: slot.log,
      service: SERVICE_NAMES[slot.component],
      env: this.env,
      cwd: this.paths.dir,
      stopGraceMs: STOP_GRACE_MS[slot.component],
    });
    slot.child = child;
    slot.spawnedAt = performance.now();
    slot.status = { ...slot.status, state: 'starting', pid: child.pid, pid_start_ticks: child.startTicks, started_at: now(), ready_at: null, probe_error: null };
    this.event('child_started', { component: slot.component, child_pid: child.pid, restarts: slot.status.restarts });
    await this.publish();
    void child.exited.then((exit) => this.onExit(slot, child, exit));
    void this.probeUntilReady(slot, child);
  }

  /** Probes a starting child until it is ready, exits, or the stack stops. */
  private async probeUntilReady(slot: Slot, child: SupervisedChild): Promise<void> {
    const spawnedAt = performance.now();
    while (this.stillStarting(slot, child)) {
      const result = await probeComponent(slot.component, slot.status.port, PROBE_TIMEOUT_MS);
      // The child may have exited, or the stack begun to stop, while the probe was out.
      if (!this.stillStarting(slot, child)) return;
      if (result.ok) {
        slot.status = { ...slot.status, state: 'running', ready_at: now(), probe_error: null };
        this.event('child_ready', { component: slot.component, child_pid: child.pid, after_ms: Math.round(performance.now() - spawnedAt) });
        await this.publish();
        return;
      }
      if (slot.status.probe_error !== result.error) {
        slot.status = { ...slot.status, probe_error: result.error };
        await this.publish();
      }
      await sleep(PROBE_INTERVAL_MS);
    }
  }

  private stillStarting(slot: Slot, child: SupervisedChild): boolean {
    return !this.stopping && slot.child === child && slot.status.state === 'starting';
  }

  /** Resolves when the slot is running; keeps waiting across restarts; returns at once when stopping. */
  private async untilReady(slot: Slot): Promise<void> {
    while (!this.stopping && slot.status.state !== 'running') await sleep(50);
  }

  private async onExit(slot: Slot, child: SupervisedChild, exit: ChildExit): Promise<void> {
    if (slot.child !== child) return;
    slot.child = null;
    const lastExit = { code: exit.code, signal: exit.signal, at: now() };
    const uptimeMs = Math.round(performance.now() - slot.spawnedAt);
    if (this.stopping) {
      slot.status = { ...slot.status, state: 'stopped', pid: null, pid_start_ticks: null, last_exit: lastExit, probe_error: null };
      this.event('child_stopped', { component: slot.component, child_pid: child.pid, code: exit.code, signal: exit.signal });
      await this.publish();
      return;
    }
    slot.streak = nextStreak(slot.streak, uptimeMs);
    const delayMs = restartDelayMs(slot.streak - 1);
    slot.status = { ...slot.status, state: 'restarting', pid: null, pid_start_ticks: null, last_exit: lastExit, probe_error: null };
    this.event('child_exited', { component: slot.component, child_pid: child.pid, code: exit.code, signal: exit.signal, uptime_ms: uptimeMs, restart_in_ms: delayMs }, 'warn');
    await this.publish();
    slot.restartTimer = setTimeout(() => {
      slot.restartTimer = null;
      if (this.stopping) return;
      slot.status = { ...slot.status, restarts: slot.status.restarts + 1 };
      void this.startChild(slot).catch((error: unknown) => {
        this.event('child_restart_failed', { component: slot.component, error: error instanceof Error ? error.name : 'unknown' }, 'error');
      });
    }, delayMs);
  }

  /** Reverse start order: executor and sandbox (together), then the ledger. */
  private async stopAll(): Promise<void> {
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
    await Promise.all([...this.slots.values()].filter((slot) => slot.component !== 'ledger').map(stop));
    // An executor stopped only by SIGKILL (past its bound) could not stop its Temporal server.
    const temporal = await liveTemporalChild(this.paths);
    if (temporal !== null) {
      this.event('temporal_orphan_stopped', { child_pid: temporal.pid, outcome: await terminateProcess(temporal.pid, temporal.startTicks, TEMPORAL_ORPHAN_GRACE_MS) }, 'warn');
    }
    const ledger = this.slots.get('ledger');
    if (ledger !== undefined) await stop(ledger);
  }

  private snapshot(): SupervisorState {
    return {
      state_version: SUPERVISOR_STATE_VERSION,
      profile: this.paths.name,
      generation_id: this.manifest.generation_id,
      supervisor_pid: process.pid,
      supervisor_pid_start_ticks: this.startTicks,
      started_at: this.startedAt,
      phase: this.phase,
      step: this.step,
      failure: this.failure,
      agent: this.agent,
      components: Object.fromEntries([...this.slots.values()].map((slot) => [slot.component, slot.status])),
    };
  }

  /** Withdraws the handoff if it names this supervisor (a newer start's is not ours to remove). */
  private async withdrawOwnHandoff(): Promise<void> {
    const current = await readHandoff(this.paths).catch(() => null);
    if (current?.supervisor_pid === process.pid) await withdrawHandoff(this.paths);
  }

  /** Publishes the current state; writes are chained so an older snapshot never lands last. */
  private publish(): Promise<void> {
    this.writing = this.writing
      .then(() => writeSupervisorState(this.paths, this.snapshot()))
      .catch((error: unknown) => {
        this.event('state_write_failed', { error: errorCode(error) ?? 'unknown' }, 'error');
      });
    return this.writing;
  }
}

function describeFailure(step: string, error: unknown): SupervisorFailure {
  if (error instanceof UserError) return { step, code: error.code, message: error.message, next_step: error.nextStep };
  return {
    step,
    code: 'internal_error',
    message: `The supervisor failed unexpectedly during ${step}.`,
    next_step: 'Run the start again; if it repeats, report it with logs/supervisor.log.',
  };
}
