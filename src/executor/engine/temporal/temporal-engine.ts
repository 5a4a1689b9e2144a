import { hostname } from 'node:os';
import { randomUUID } from 'node:crypto';
import { Client, Connection, WorkflowExecutionAlreadyStartedError, isGrpcServiceError } from '@temporalio/client';
import proto from '@temporalio/proto';
import { NativeConnection, Runtime, Worker, type WorkerStatus } from '@temporalio/worker';
import type { ExecutionPhase } from '../../domain/execution-states.js';
import { grpcStatusName } from '../../domain/grpc-status.js';
import { foreignPollers, isLegacyWorker, workerIdentity } from '../../domain/installation.js';
import type { EngineSample } from '../../readiness-monitor.js';
import { backoffMs } from '../embedded-engine.js';
import type { RunActivity, WorkflowEngine } from '../workflow-engine.js';
import { createPhaseActivities } from './activities.js';
import { createTemporalRuns, WORKFLOW_TASK_TIMEOUT } from './temporal-runs.js';
import { EXECUTION_WORKFLOW_TYPE, type ExecutionWorkflowInput } from './workflow.js';
import { workflowBundle, type WorkflowBundle } from './workflow-bundle.js';

/*
 * The Temporal workflow engine (managed_local and external modes; docs/executions.md "The
 * engine"). A client starts one workflow per execution at its stable id; a worker in this process
 * runs the workflow (bundled once) and its activities, which are the runner's phases on the
 * executor's own database. The worker is kept running by a loop that reconnects with backoff, so
 * an engine that is away at start, or goes away and comes back, never needs an executor restart.
 */

/** Where the engine is and what this executor polls. */
export interface TemporalEndpoint {
  /** `host:port` of the frontend gRPC service. */
  readonly address: string;
  readonly tls: boolean;
  readonly namespace: string;
  readonly taskQueue: string;
}

export interface EngineLogger {
  info(entry: Record<string, unknown>): void;
  warn(entry: Record<string, unknown>): void;
  error(entry: Record<string, unknown>): void;
}

export interface TemporalEngineOptions extends TemporalEndpoint {
  /** This installation (domain/installation.ts): names its worker, and tells its pollers from another's. */
  readonly installationId: string;
  readonly runActivity: RunActivity;
  readonly onActivityError?: (executionId: string, phase: ExecutionPhase, error: unknown) => void;
  readonly logger: EngineLogger;
  /** Activities run at once by this worker. */
  readonly concurrency?: number;
  /** How long the worker's shutdown waits for running activities. */
  readonly drainMs?: number;
  readonly bundle?: WorkflowBundle;
  /**
   * The setting `address` comes from: the operator's workflow_engine.address (external), blamed
   * when no engine ever answered there; or null, for a managed server's own 127.0.0.1 address,
   * which is no operator setting and served before the engine was built — an engine that is away
   * then is a child exiting or restarting, which the managed server logs and restarts.
   */
  readonly addressField: AddressField;
}

type AddressField = 'workflow_engine.address' | null;

/**
 * Scheduling creates the first run at a workflow id, once: an open run is kept, and a closed one is
 * not started again here — that is the rescheduler's (temporal-runs.ts), which logs and counts it.
 */
const START_POLICIES = { workflowIdConflictPolicy: 'USE_EXISTING', workflowIdReusePolicy: 'REJECT_DUPLICATE' } as const;
/** Upper bound of one workflow start. */
const SCHEDULE_TIMEOUT_MS = 10_000;
/** gRPC status 1: the only engine answer the readiness rules treat apart (spec §3 rule 5). */
const GRPC_CANCELLED = 1;
/** gRPC status 4: what a bounded RPC that ran out of time reports. */
const GRPC_DEADLINE_EXCEEDED = 4;
const GRPC_NOT_FOUND = 5;
const GRPC_UNAVAILABLE = 14;

/**
 * A probe failure that points at a setting rather than at a passing fault: an unknown namespace,
 * or an operator's address where no engine has ever answered. Said once per process, with the
 * field to fix.
 */
function settingAtFault(code: number | undefined, everAnswered: boolean, addressField: AddressField): { field: string; next_step: string } | undefined {
  if (code === GRPC_NOT_FOUND) {
    return { field: 'workflow_engine.namespace', next_step: 'Create the namespace on the Temporal cluster (temporal operator namespace create), or set workflow_engine.namespace to one that exists.' };
  }
  if (addressField !== null && !everAnswered && (code === GRPC_UNAVAILABLE || code === GRPC_DEADLINE_EXCEEDED || code === undefined)) {
    return { field: 'workflow_engine.address', next_step: 'Check that a Temporal frontend answers at workflow_engine.address (host, port, and grpcs:// only for TLS).' };
  }
  return undefined;
}

/** Messages of the SDK's own log lines pass as they are; of their metadata only these plain fields. */
const SAFE_META = ['taskQueue', 'namespace', 'workflowType', 'activityType', 'attempt', 'state', 'sdkComponent'] as const;

const { TaskQueueKind, TaskQueueType } = proto.temporal.api.enums.v1;

let runtimeInstalled = false;

/**
 * The SDK's runtime is one per process: its log lines become the executor's JSON lines (keeping
 * only safe metadata fields), and it installs no signal handlers — the executor drains on its own
 * SIGINT/SIGTERM, in its own order.
 */
function installRuntime(logger: EngineLogger): void {
  if (runtimeInstalled) return;
  runtimeInstalled = true;
  const forward = (level: string, message: string, meta?: Record<string | symbol, unknown>) => {
    if (level !== 'WARN' && level !== 'ERROR') return;
    const fields: Record<string, unknown> = { event: 'temporal_sdk_log', message };
    for (const key of SAFE_META) if (meta !== undefined && typeof meta[key] !== 'object' && meta[key] !== undefined) fields[key] = meta[key];
    if (level === 'WARN') logger.warn(fields);
    else logger.error(fields);
  };
  Runtime.install({
    shutdownSignals: [],
    logger: {
      log: forward,
      trace: () => undefined,
      debug: () => undefined,
      info: () => undefined,
      warn: (message, meta) => { forward('WARN', message, meta); },
      error: (message, meta) => { forward('ERROR', message, meta); },
    },
    telemetryOptions: { logging: { forward: {}, filter: { core: 'WARN', other: 'ERROR' } } },
  });
}

/** A gRPC address (`host:port`) from the engine settings' URL form. */
export function grpcAddress(url: string): { address: string; tls: boolean } {
  const parsed = new URL(url);
  return { address: parsed.host, tls: parsed.protocol === 'grpcs:' };
}

export function createTemporalEngine(options: TemporalEngineOptions): WorkflowEngine & { readonly identity: string } {
  const { logger, namespace, taskQueue, installationId } = options;
  installRuntime(logger);
  // Unique per process, so a poller a previous process left on the queue is never taken for this
  // one; and naming the installation, so its pollers are told from another installation's.
  const identity = workerIdentity(installationId, hostname(), process.pid, randomUUID().slice(0, 8));
  const tls = options.tls ? {} : undefined;
  const connection = Connection.lazy({ address: options.address, tls });
  const client = new Client({ connection, namespace });
  // Readiness samples are single RPCs (spec §3: each task-queue RPC's own answer counts), so
  // this connection has none of the SDK's retries of UNAVAILABLE.
  const probeConnection = Connection.lazy({ address: options.address, tls, interceptors: [] });
  const activities = createPhaseActivities({ runActivity: options.runActivity, onActivityError: options.onActivityError });

  const life = { running: false, everAnswered: false };
  // When this process first saw each pre-installation-id lexec worker on the queue (domain/installation.ts).
  const legacyFirstSeen = new Map<string, number | undefined>();
  const reported = new Set<string>();
  // A call, so that a check after an await sees what drain() changed meanwhile.
  const isRunning = () => life.running;
  let worker: Worker | undefined;
  let workerConnection: NativeConnection | undefined;
  let loop: Promise<void> | undefined;
  let wake: (() => void) | undefined;

  async function sleepUnlessStopped(ms: number): Promise<void> {
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, ms);
      wake = () => {
        clearTimeout(timer);
        resolve();
      };
    });
    wake = undefined;
  }

  /** Connects, creates the worker and runs it; after any failure, again with backoff until drained. */
  async function keepWorkerRunning(): Promise<void> {
    const bundle = options.bundle ?? (await workflowBundle());
    for (let failures = 0; isRunning(); ) {
      try {
        workerConnection = await NativeConnection.connect({ address: options.address, tls });
        if (!isRunning()) break;
        worker = await Worker.create({
          connection: workerConnection,
          namespace,
          taskQueue,
          identity,
          workflowBundle: bundle,
          activities,
          maxConcurrentActivityTaskExecutions: options.concurrency ?? 16,
          shutdownGraceTime: options.drainMs ?? 10_000,
          // A workflow task waiting on the sticky queue of a worker that died goes to the shared
          // queue after this, instead of the default 10 s: a restarted executor resumes sooner.
          stickyQueueScheduleToStartTimeout: '3s',
        });
        if (!isRunning()) break;
        logger.info({ event: 'temporal_worker_started', namespace, task_queue: taskQueue, after_failures: failures });
        failures = 0;
        await worker.run();
        if (isRunning()) logger.warn({ event: 'temporal_worker_stopped' });
      } catch (error) {
        failures += 1;
        logger.warn({ event: 'temporal_worker_failed', error_name: error instanceof Error ? error.name : 'unknown', grpc_code: grpcCode(error), failures });
      } finally {
        worker = undefined;
        await workerConnection?.close().catch(() => undefined);
        workerConnection = undefined;
      }
      if (isRunning()) await sleepUnlessStopped(Math.min(backoffMs(failures), 10_000));
    }
  }

  async function schedule(executionId: string, workflowId: string): Promise<void> {
    const input: ExecutionWorkflowInput = { execution_id: executionId, phase: 'submit_provider' };
    try {
      await connection.withDeadline(Date.now() + SCHEDULE_TIMEOUT_MS, () =>
        client.workflow.start(EXECUTION_WORKFLOW_TYPE, { taskQueue, workflowId, args: [input], workflowTaskTimeout: WORKFLOW_TASK_TIMEOUT, ...START_POLICIES }),
      );
    } catch (error) {
      // A run that closed already: the rescheduler starts a new one if the execution is not done.
      if (error instanceof WorkflowExecutionAlreadyStartedError) return;
      throw error;
    }
  }

  return {
    identity,
    runs: createTemporalRuns({ client, connection, taskQueue }),
    schedule,
    async release(workflowId) {
      // The run's workflow tasks go to the sticky queue of the worker that served it last — a
      // worker of the process that died, if it did — and wait there up to the sticky timeout
      // (3 s, below) before the engine gives them to the shared queue. Nothing of this process
      // holds the run yet, so its binding is released now: its next task goes to the shared queue
      // (were this process's worker serving it already, the cost is one replay of its history).
      // Only a shortcut: a run that closed has nothing bound, and a release that fails leaves the
      // engine's own sticky timeout to do the same a little later — never a reason to hold up recovery.
      await connection
        .withDeadline(Date.now() + SCHEDULE_TIMEOUT_MS, () => connection.workflowService.resetStickyTaskQueue({ namespace, execution: { workflowId } }))
        .catch(() => undefined);
    },
    start() {
      if (life.running) return Promise.resolve();
      life.running = true;
      loop = keepWorkerRunning();
      return Promise.resolve();
    },
    async probe({ timeoutMs }): Promise<EngineSample> {
      try {
        const answer = await probeConnection.withDeadline(Date.now() + timeoutMs, () =>
          probeConnection.workflowService.describeTaskQueue({ namespace, taskQueue: { name: taskQueue, kind: TaskQueueKind.TASK_QUEUE_KIND_NORMAL }, taskQueueType: TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW }),
        );
        life.everAnswered = true;
        const pollers = answer.pollers.filter((poller) => poller.identity === identity).length;
        const sightings = answer.pollers.map((poller) => ({ identity: poller.identity ?? '', lastAccessMs: timestampMs(poller.lastAccessTime) }));
        for (const sighting of sightings) {
          if (isLegacyWorker(sighting.identity) && !legacyFirstSeen.has(sighting.identity)) legacyFirstSeen.set(sighting.identity, sighting.lastAccessMs);
        }
        const foreign = foreignPollers(sightings, installationId, legacyFirstSeen).length;
        if (foreign > 0 && !reported.has('task_queue_shared')) {
          reported.add('task_queue_shared');
          logger.error({
            event: 'task_queue_shared',
            field: 'workflow_engine.task_queue',
            task_queue: taskQueue,
            foreign_pollers: foreign,
            next_step: 'Another installation (or another program) polls this task queue and would run this executor\'s executions: give each executor its own queue (remove workflow_engine.task_queue to use the derived one).',
          });
        }
        // A worker that is not running polls nothing, whatever the queue still remembers of it.
        return { outcome: 'ok', pollers: worker?.getState() === 'RUNNING' ? pollers : 0, foreignPollers: foreign };
      } catch (error) {
        const code = grpcCode(error);
        if (code === GRPC_CANCELLED) return { outcome: 'cancelled' };
        const fault = settingAtFault(code, life.everAnswered, options.addressField);
        if (fault !== undefined && !reported.has(fault.field)) {
          reported.add(fault.field);
          logger.error({ event: 'workflow_engine_setting_suspect', ...fault, grpc_status: grpcStatusName(code) ?? 'none' });
        }
        return code === undefined ? { outcome: 'error' } : { outcome: 'error', code };
      }
    },
    async drain(boundMs) {
      life.running = false;
      wake?.();
      const inFlight = numInFlight(worker?.getStatus());
      if (worker !== undefined && worker.getState() === 'RUNNING') worker.shutdown();
      let timer: NodeJS.Timeout | undefined;
      const bound = new Promise<'timeout'>((resolve) => {
        timer = setTimeout(() => { resolve('timeout'); }, boundMs);
      });
      const result = await Promise.race([(loop ?? Promise.resolve()).then(() => 'drained' as const), bound]);
      clearTimeout(timer);
      return { drained: result === 'drained', inFlight: result === 'drained' ? 0 : inFlight };
    },
    async close() {
      await connection.close().catch(() => undefined);
      await probeConnection.close().catch(() => undefined);
    },
  };
}

/** A protobuf timestamp in milliseconds; undefined when absent. */
function timestampMs(at: { seconds?: { toNumber(): number } | number | null; nanos?: number | null } | null | undefined): number | undefined {
  if (at?.seconds == null) return undefined;
  const seconds = typeof at.seconds === 'number' ? at.seconds : at.seconds.toNumber();
  return seconds * 1_000 + Math.floor((at.nanos ?? 0) / 1_000_000);
}

function numInFlight(status: WorkerStatus | undefined): number {
  return status === undefined ? 0 : status.numInFlightActivities;
}

/** The gRPC status code of an engine error (a deadline we set counts as DEADLINE_EXCEEDED); never its message. */
function grpcCode(error: unknown): number | undefined {
  if (isGrpcServiceError(error)) return error.code;
  const cause = error instanceof Error ? (error as { cause?: unknown }).cause : undefined;
  if (isGrpcServiceError(cause)) return cause.code;
  if (error instanceof Error && error.name === 'TimeoutError') return GRPC_DEADLINE_EXCEEDED;
  return undefined;
}
