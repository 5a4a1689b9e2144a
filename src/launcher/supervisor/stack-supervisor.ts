import { join } from 'node:path';
import { errorCode, UserError } from '../../errors.js';
import { restrictProcessUmask } from '../../storage/private-state.js';
import { generationDir } from '../generations/generation-store.js';
import { processStartTicks } from '../../process/process-identity.js';
import { loadProfile, resolveProfileName } from '../profiles/profile-store.js';
import type { GenerationManifest } from '../generations/render-generation.js';
import { restartDelayMs } from '../../process/restart-policy.js';
import { openRotatingLog, type RotatingLog } from '../../process/rotating-log.js';
import { lexecHome, profilePaths, type ProfilePaths } from '../home/stack-home.js';
import { acquireSupervisorLock } from '../home/stack-locks.js';
import { SupervisedChildren, type SupervisorEvent } from './supervisor-children.js';
import { SUPERVISOR_STATE_VERSION, writeSupervisorState, type SupervisorFailure, type SupervisorPhase, type SupervisorState } from './supervisor-state.js';
import { activeManifest } from '../generations/stack-generations.js';
import { readHandoff, stackHandoff, withdrawHandoff, writeHandoff } from '../handoff/handoff.js';

/*
 * The per-profile supervisor (`lexec stack supervise`, hidden; docs/stack-runtime.md). Started
 * detached by `stack start`, it owns the stack from then on: it holds the supervisor lock,
 * starts the children in order — ledger, wait for /health; credential bootstrap and the local
 * agent and approver credentials (in this process: nothing else needs to run for a restart);
 * executor and sandbox provider, wait for /readyz — writes their output to the rotating logs,
 * restarts a child that exits on its own (src/process/restart-policy.ts), publishes everything in
 * state/supervisor.json, and on SIGTERM or SIGINT stops the children in reverse order. The
 * children themselves (spawn, probe, restart, stop) are supervisor-children.ts's.
 */

/** Ledger refusals during bootstrap that waiting can cure (the ledger restarting); anything else stops the stack. */
const TRANSIENT_CODES = new Set(['ledger_unreachable', 'ledger_server_error']);

export interface SupervisorStopped {
  readonly status: 'stopped';
  readonly signal: string | null;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const now = () => new Date().toISOString();

/** The supervisor's own JSON log lines, in the shape pino gives the servers' lines. */
function eventLogger(log: RotatingLog): SupervisorEvent {
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
    return await new Supervisor(paths, manifest, { env: request.env, agentName: profile.agent?.name ?? null, event }).run();
  } catch (error) {
    event('supervisor_failed', { code: error instanceof UserError ? error.code : 'internal_error', message: error instanceof UserError ? error.message : 'unexpected error' }, 'error');
    throw error;
  } finally {
    supervisorLog.close();
    await release();
  }
}

class Supervisor {
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
  private readonly children: SupervisedChildren;

  private readonly agentName: string | null;
  private readonly event: SupervisorEvent;

  constructor(
    private readonly paths: ProfilePaths,
    private readonly manifest: GenerationManifest,
    options: { env: NodeJS.ProcessEnv; agentName: string | null; event: SupervisorEvent },
  ) {
    this.agentName = options.agentName;
    this.event = options.event;
    this.children = new SupervisedChildren(paths, manifest, {
      env: options.env,
      event: options.event,
      publish: () => this.publish(),
      stopping: () => this.stopping,
    });
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
    this.event('supervisor_started', { profile: this.paths.name, generation_id: this.manifest.generation_id, components: this.children.all().map((slot) => slot.component) });
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
      await this.children.stopAll();
      this.phase = this.failure === null ? 'stopped' : 'failed';
      await this.publish();
      this.event('supervisor_stopped', { signal: this.stopSignal });
      this.children.closeLogs();
      process.removeListener('SIGTERM', onSignal);
      process.removeListener('SIGINT', onSignal);
    }
    if (this.failure !== null) {
      throw new UserError(this.failure.code, this.failure.message, { nextStep: this.failure.next_step });
    }
    return { status: 'stopped', signal: this.stopSignal };
  }

  /**
   * By role (docs/deployment.md "Roles"). All-in-one: ledger → bootstrap → local credentials →
   * executor and sandbox, each waited for. Ledger host: ledger → its approver and metrics
   * credentials. Executor host: its enrolment and the remote ledger checked → executor and sandbox.
   */
  private async startSequence(): Promise<void> {
    if (this.manifest.remote_ledger !== undefined) {
      await this.startExecutorHost(this.manifest.remote_ledger);
      return;
    }
    const ledger = this.children.slot('ledger');
    // A ledger on its own address over TLS ([ledger.http]) is probed and called there, verified against its CA.
    const own = this.manifest.components.ledger;
    const ledgerUrl = own?.endpoint ?? `http://127.0.0.1:${ledger.status.port}`;
    const { readCaFile } = await import('../../http/tls-trust.js');
    const caCertificate = own?.ca_file === undefined ? null : await readCaFile(own.ca_file, 'ledger.http.tls.ca_file');
    if (own?.endpoint !== undefined) {
      const { probeTargetOf } = await import('../../process/loopback-probe.js');
      this.children.probeAt('ledger', probeTargetOf(own.endpoint, caCertificate));
    }
    await this.children.startChild(ledger);
    await this.children.untilReady(ledger);
    if (this.manifest.components.executor === undefined) {
      await this.provisionLocal(ledgerUrl, caCertificate);
      return;
    }

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

    await this.provisionLocal(ledgerUrl, caCertificate);

    await this.setStep('executor');
    const rest = this.children.all().filter((slot) => slot.component !== 'ledger');
    for (const slot of rest) await this.children.startChild(slot);
    for (const slot of rest) await this.children.untilReady(slot);
  }

  /** The local agent (where an executor runs) and the approver and metrics credentials at this host's own ledger. */
  private async provisionLocal(ledgerUrl: string, caCertificate: string | null): Promise<void> {
    await this.setStep(this.agentName === null ? 'approver credentials' : 'local agent and approver credentials');
    const { provisionLocalCredentials } = await import('../handoff/stack-local-credentials.js');
    const local = await this.retryTransient(() =>
      provisionLocalCredentials({
        ledgerUrl,
        ...(caCertificate === null ? {} : { caCertificate }),
        adminCapabilityPath: this.paths.ledgerAdminCapability,
        agentName: this.manifest.components.executor === undefined ? null : this.agentName,
        agentCapabilityPath: this.paths.agentCapability,
        approverCapabilityPath: this.paths.approverCapability,
        metricsCapabilityPath: this.paths.metricsCapability,
      }),
    );
    this.agent = local.agent;
    this.event('local_credentials_ready', {
      agent_name: local.agent?.name ?? null,
      agent_id: local.agent?.agent_id ?? null,
      agent: local.agent_outcome,
      agent_credential: local.agent_credential,
      approver_credential: local.approver_credential,
      metrics_credential: local.metrics_credential,
    });
  }

  /**
   * An executor host: no ledger of its own and no admin capability. Its credentials came from
   * `stack enrol`; the remote ledger must be of this lineage and accept them (waited for while it
   * cannot be reached), then the executor and the sandbox start.
   */
  private async startExecutorHost(remote: { url: string; ca_file?: string | undefined }): Promise<void> {
    await this.setStep('remote ledger');
    const { readEnrolmentState } = await import('../enrolment/enrolment-state.js');
    const enrolment = await readEnrolmentState(this.paths);
    if (enrolment === null) {
      throw new UserError('not_enrolled', `Profile "${this.paths.name}" is an executor host that has not enrolled at its ledger (${remote.url}).`, {
        nextStep: `On the ledger host: \`lexec ledger enrolments issue --name ${this.paths.name} --token-file <file>\`; move the file here privately; then \`lexec stack enrol --profile ${this.paths.name} --token-file <file>\`.`,
      });
    }
    const { checkRemoteLedgerStanding } = await import('../enrolment/remote-ledger.js');
    const { readBuildInfo } = await import('../../build-info.js');
    const { managedCredentialPaths } = await import('../../executor/managed-credentials.js');
    await this.retryTransient(() =>
      checkRemoteLedgerStanding(
        { url: remote.url, caFile: remote.ca_file ?? null },
        { executor: managedCredentialPaths(this.paths.executorCredentialsDir).ledger, agent: this.paths.agentCapability },
        readBuildInfo(),
      ),
    );
    this.agent = enrolment.agent;
    this.event('remote_ledger_ready', { ledger: remote.url, agent_name: enrolment.agent.name, agent_id: enrolment.agent.agent_id });
    await this.setStep('executor');
    const rest = this.children.all();
    for (const slot of rest) await this.children.startChild(slot);
    for (const slot of rest) await this.children.untilReady(slot);
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
      components: this.children.statuses(),
      ...(this.manifest.components.ledger?.endpoint === undefined ? {} : { own_ledger: { endpoint: this.manifest.components.ledger.endpoint, ca_file: this.manifest.components.ledger.ca_file ?? null } }),
      ...(this.manifest.remote_ledger === undefined ? {} : { remote_ledger: { url: this.manifest.remote_ledger.url, ca_file: this.manifest.remote_ledger.ca_file ?? null } }),
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
