import type { ExecutionRow } from '../store/execution-reads.js';
import type { ExecutionStore } from '../store/execution-store.js';
import type { RescheduleRecord } from '../store/installation-store.js';
import type { RunInspection, WorkflowRuns } from './workflow-engine.js';

/*
 * The sibling of reschedule-non-terminal.ts for engines whose runs can close without the executor
 * (Temporal; docs/executions.md "Rescheduling closed runs"). reschedule-non-terminal.ts creates a
 * run where none was ever started; this finds executions that are still `scheduled` or `running`
 * although their run is closed (an operator terminated it, another installation's worker failed
 * it with `execution_not_owned`, it timed out), gone (the engine's retention removed it) or open
 * on a task queue this executor no longer polls (the queue was changed), and starts a new run at
 * the same workflow id. An execution parked for reconciliation whose ledger record was not
 * answered yet still needs its run too (that run opens the record). The new run decides from the
 * database like any other: a checkpointed attempt is polled, an attempt without checkpoint goes to
 * reconciliation, a parked one opens its ledger record with the evidence kept with the park, and
 * nothing is ever submitted twice (execution-runner.ts).
 */

/** Time between the end of one sweep and the start of the next: a closed run is found within 60 s (one interval plus a sweep). */
export const RESCHEDULE_INTERVAL_MS = 30_000;
/** Runs asked about at once: a sweep never floods the engine, whatever the number of executions. */
const SWEEP_CONCURRENCY = 4;

export interface SweepResult {
  /** Executions whose run was asked about. */
  readonly inspected: number;
  readonly rescheduled: number;
  /** Executions the engine could not be asked about (or refused the start): asked again next sweep. */
  readonly failed: number;
}

export interface ClosedRunRescheduler {
  /** Sweeps now, then every interval until stopped. */
  start(): void;
  /** One sweep (the periodic ones call this too); never rejects. */
  sweep(): Promise<SweepResult>;
  stop(): void;
}

interface SweepLogger {
  warn(entry: Record<string, unknown>): void;
}

/** What the log and the record say of the run found. */
function previousStatus(found: Exclude<RunInspection, { kind: 'open' }>): string {
  if (found.kind === 'closed') return found.status;
  return found.kind === 'missing' ? 'NOT_FOUND' : 'RUNNING';
}

const STILL_RUNNING = new Set(['scheduled', 'running']);

/**
 * Whether an execution still needs a run: under way, or parked before the ledger answered its
 * reconciliation record (the run that parked it opens that record; closed, nobody would).
 */
function needsRun(execution: Pick<ExecutionRow, 'state' | 'ledger_record_at'>): boolean {
  return STILL_RUNNING.has(execution.state) || (execution.state === 'reconciliation' && execution.ledger_record_at === null);
}

export function rescheduleClosedRuns(options: {
  readonly store: Pick<ExecutionStore, 'nonTerminal' | 'awaitingLedgerRecord' | 'execution'>;
  readonly runs: WorkflowRuns;
  readonly record: (record: RescheduleRecord) => void;
  readonly logger: SweepLogger;
  /** Default RESCHEDULE_INTERVAL_MS. */
  readonly intervalMs?: number;
}): ClosedRunRescheduler {
  const { store, runs, logger } = options;
  const intervalMs = options.intervalMs ?? RESCHEDULE_INTERVAL_MS;
  const state: { stopped: boolean; timer?: NodeJS.Timeout; sweeping?: Promise<SweepResult> } = { stopped: false };

  /** Whether the execution still needs a run after the engine said `found` of it. */
  async function recover(executionId: string, workflowId: string): Promise<boolean> {
    const found = await runs.inspect(workflowId);
    if (found.kind === 'open') return false;
    // Read again after the engine answered: a run closes only after its execution's final state
    // was committed, so an execution that is still under way now really has no run working on it.
    const execution = store.execution(executionId);
    if (execution === undefined || !needsRun(execution)) return false;
    await runs.startAgain(executionId, workflowId, found.kind === 'elsewhere');
    const status = previousStatus(found);
    const from = found.kind === 'missing' ? null : found.taskQueue;
    options.record({ executionId, previousStatus: status, previousTaskQueue: from, taskQueue: runs.taskQueue });
    logger.warn({
      event: 'workflow_rescheduled',
      execution_id: executionId,
      workflow_id: workflowId,
      reason: found.kind === 'closed' ? 'run_closed' : found.kind === 'missing' ? 'run_missing' : 'task_queue_moved',
      ...(found.kind === 'closed' ? { closed_status: status } : {}),
      ...(from === null || from === runs.taskQueue ? {} : { previous_task_queue: from }),
      task_queue: runs.taskQueue,
    });
    return true;
  }

  async function sweepOnce(): Promise<SweepResult> {
    const live = [...store.nonTerminal().filter((execution) => STILL_RUNNING.has(execution.state)), ...store.awaitingLedgerRecord()];
    let next = 0;
    let rescheduled = 0;
    let failed = 0;
    const worker = async () => {
      for (let item = live[next++]; item !== undefined && !state.stopped; item = live[next++]) {
        try {
          if (await recover(item.execution_id, item.workflow_id)) rescheduled += 1;
        } catch {
          failed += 1;
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(SWEEP_CONCURRENCY, live.length) }, worker));
    if (failed > 0) logger.warn({ event: 'workflow_reschedule_incomplete', failed, inspected: live.length, retry_in_ms: intervalMs });
    return { inspected: live.length, rescheduled, failed };
  }

  function sweep(): Promise<SweepResult> {
    // One sweep at a time: a sweep asked for while one runs gets that one's result.
    state.sweeping ??= sweepOnce().catch(() => ({ inspected: 0, rescheduled: 0, failed: 1 })).finally(() => {
      state.sweeping = undefined;
    });
    return state.sweeping;
  }

  function loop(): void {
    if (state.stopped) return;
    void sweep().then(() => {
      if (state.stopped) return;
      state.timer = setTimeout(loop, intervalMs);
      state.timer.unref();
    });
  }

  return {
    start: loop,
    sweep,
    stop() {
      state.stopped = true;
      clearTimeout(state.timer);
    },
  };
}
