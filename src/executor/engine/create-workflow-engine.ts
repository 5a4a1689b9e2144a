import type Database from 'better-sqlite3';
import type { WorkflowEngineConfig } from '../config/executor-config-schema.js';
import type { ExecutionPhase } from '../domain/execution-states.js';
import { derivedTaskQueue } from '../domain/installation.js';
import type { ExecutionStore } from '../store/execution-store.js';
import { createEmbeddedEngine } from './embedded-engine.js';
import type { RunActivity, WorkflowEngine } from './workflow-engine.js';
import type { EngineLogger } from './temporal/temporal-engine.js';

/** SIGTERM → SIGKILL bound for a managed Temporal child (it stops in 2-3 s). */
const MANAGED_STOP_GRACE_MS = 8_000;

export interface EngineDependencies {
  readonly db: Database.Database;
  readonly store: ExecutionStore;
  readonly runActivity: RunActivity;
  readonly logger: EngineLogger;
  readonly onActivityError: (executionId: string, phase: ExecutionPhase, error: unknown) => void;
  /** This installation's id (the executor database's): its default task queue and its workers' names. */
  readonly installationId: string;
  /** Told when the engine knows its health changed (a managed child exited or came back), so readiness need not wait for its next sample. */
  readonly onHealthChange?: () => void;
}

/** What `/version`-like reports and the started event say of the engine (no secret, no path). */
export interface EngineDescription {
  readonly mode: WorkflowEngineConfig['mode'];
  readonly address?: string;
  readonly namespace?: string;
  readonly task_queue?: string;
  readonly ui_url?: string;
}

export type ConfiguredEngine = WorkflowEngine & { readonly description: EngineDescription };

/**
 * The engine the configuration names (ARCHITECTURE.md "Workflow engine: three modes, one port").
 * The Temporal modes load the SDK only when chosen, so an embedded executor never pays for it.
 * managed_local starts its Temporal child here: a CLI that is missing or not the pinned version
 * refuses the start (a UserError naming the field); a child that exits before it serves is
 * spawned again with backoff, and only one that never serves fails the start.
 */
export async function createWorkflowEngine(config: WorkflowEngineConfig, deps: EngineDependencies): Promise<ConfiguredEngine> {
  if (config.mode === 'embedded') return embedded(deps);
  const { createTemporalEngine, grpcAddress } = await import('./temporal/temporal-engine.js');
  // An explicit task queue is the operator's; unset, the installation's own (docs/executions.md "Task-queue ownership").
  const taskQueue = config.task_queue ?? derivedTaskQueue(deps.installationId);
  if (config.mode === 'external') {
    const engine = createTemporalEngine({ ...grpcAddress(config.address), addressField: 'workflow_engine.address', namespace: config.namespace, taskQueue, ...deps });
    return { ...engine, description: { mode: 'external', address: config.address, namespace: config.namespace, task_queue: taskQueue, ui_url: config.ui_url } };
  }
  const { createManagedTemporalServer, managedTemporalSettings } = await import('./temporal/managed-temporal-server.js');
  const server = createManagedTemporalServer({ ...managedTemporalSettings(config), logger: deps.logger, onStateChange: () => deps.onHealthChange?.() });
  await server.start();
  // The address is the server's own and it has served: a failure later is its child restarting, never a setting.
  const engine = createTemporalEngine({ address: server.address, addressField: null, tls: false, namespace: config.namespace, taskQueue, ...deps });
  return {
    ...engine,
    async close() {
      await engine.close();
      // Only after the worker drained: the engine's own child, and nothing else (spec §8 Operations 1).
      await server.stop(MANAGED_STOP_GRACE_MS);
    },
    description: { mode: 'managed_local', address: `grpc://${server.address}`, namespace: config.namespace, task_queue: taskQueue, ui_url: server.uiUrl },
  };
}

function embedded(deps: EngineDependencies): ConfiguredEngine {
  const engine = createEmbeddedEngine({
    db: deps.db,
    runActivity: deps.runActivity,
    // `pending → scheduled` in the commit that creates the run (one commit per hand-off).
    onScheduled: (executionId) => {
      deps.store.recordScheduled(executionId);
    },
    onActivityError: deps.onActivityError,
  });
  return {
    schedule: (executionId, workflowId) => engine.schedule(executionId, workflowId),
    start() {
      engine.start();
      return Promise.resolve();
    },
    probe: () => Promise.resolve({ outcome: 'ok', pollers: engine.pollers() }),
    drain: (boundMs) => engine.drain(boundMs),
    close: () => Promise.resolve(),
    description: { mode: 'embedded' },
  };
}
