import { appendFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { logFilePath, LOG_RETAINED } from '../../src/process/log-files.js';
import type { ProfilePaths } from '../../src/launcher/home/stack-home.js';
import { query } from './crash-scenarios.js';

/*
 * How long a crash-matrix case took to resume (docs/reliability.md "Crash points", docs/benchmarks.md
 * "Resume after a kill"): from the moment the killed process was started again (its
 * `executor_started` / `ledger_started` log line after the `crash_point_fired` one) until the
 * execution moved on — its first durable step after that moment, its final state, its workflow
 * run closed. Measured, printed and recorded, never asserted: speed is proven by figures, not by a
 * timed test (bench/proof/resume.mjs runs the matrix and summarises them).
 */

/** Where the matrix appends one JSON line per case (bench/proof/resume.mjs sets it). */
export const RESUME_FILE_ENV = 'LEXEC_PROOF_RESUME_FILE';

export interface ResumeFigure {
  readonly case: string;
  readonly engine: string;
  readonly killed: 'executor' | 'ledger';
  /** The kill → the killed process logged its start again. */
  readonly restartMs: number | null;
  /** Executor: its restart → its Temporal worker polls (`temporal_worker_started`). */
  readonly workerMs: number | null;
  /** The restart → the execution's first durable record after it (an attempt, an artifact, a receipt, a state). */
  readonly nextStepMs: number | null;
  /** The restart → the execution's final state, when that was written after the restart. */
  readonly finalMs: number | null;
  /** The restart → its workflow run closed (Temporal), when the run was still open at the kill. */
  readonly closedMs: number | null;
}

interface LogEvent {
  readonly event: string;
  readonly time: number;
  readonly point?: string;
}

/** The events named of one component's log, every retained generation, oldest first. */
async function logEvents(logsDir: string, component: string, events: readonly string[]): Promise<LogEvent[]> {
  const found: LogEvent[] = [];
  for (let generation = LOG_RETAINED; generation >= 0; generation -= 1) {
    const text = await readFile(logFilePath(logsDir, component, generation), 'utf8').catch(() => '');
    for (const line of text.split('\n')) {
      if (!events.some((event) => line.includes(`"${event}"`))) continue;
      try {
        // The servers log ISO times; the crash point's own line, written as it dies, epoch ms.
        const entry = JSON.parse(line) as { event?: unknown; time?: unknown; point?: unknown };
        const time = typeof entry.time === 'number' ? entry.time : typeof entry.time === 'string' ? Date.parse(entry.time) : Number.NaN;
        if (typeof entry.event === 'string' && events.includes(entry.event) && Number.isFinite(time)) {
          found.push({ event: entry.event, time, ...(typeof entry.point === 'string' ? { point: entry.point } : {}) });
        }
      } catch {
        // a torn line
      }
    }
  }
  return found;
}

/** The execution's durable records after `since` (executor clock, ms): the earliest of them. */
function firstRecordAfter(executorDatabase: string, executionId: string, since: number): number | null {
  const [row] = query<{ first: number | null }>(
    executorDatabase,
    `SELECT min(t) AS first FROM (
       SELECT updated_at AS t FROM executions WHERE execution_id = :id
       UNION ALL SELECT created_at FROM provider_attempts WHERE execution_id = :id
       UNION ALL SELECT updated_at FROM provider_attempts WHERE execution_id = :id
       UNION ALL SELECT created_at FROM artifacts WHERE execution_id = :id
       UNION ALL SELECT created_at FROM receipts WHERE execution_id = :id
     ) WHERE t > :since`,
    { id: executionId, since },
  );
  return row?.first ?? null;
}

/**
 * The figures of one case, read after it came to rest. `closedAtMs`: when its workflow run closed
 * (null on the embedded engine). Answers null when the point's kill is not in the logs.
 */
export async function resumeFigure(options: {
  readonly caseName: string;
  readonly engine: string;
  readonly killed: 'executor' | 'ledger';
  readonly point: string;
  readonly paths: ProfilePaths;
  readonly executionId: string;
  readonly closedAtMs: number | null;
}): Promise<ResumeFigure | null> {
  const { paths, killed } = options;
  const events = await logEvents(paths.logsDir, killed, ['crash_point_fired', `${killed}_started`, 'temporal_worker_started']);
  const fired = events.filter((entry) => entry.event === 'crash_point_fired' && entry.point === options.point).at(-1);
  if (fired === undefined) return null;
  const after = (event: string, from: number) => events.find((entry) => entry.event === event && entry.time >= from)?.time ?? null;
  const restarted = after(`${killed}_started`, fired.time);
  if (restarted === null) return null;
  const worker = killed === 'executor' ? after('temporal_worker_started', fired.time) : null;
  const [execution] = query<{ updated_at: number; state: string }>(paths.executorDatabase, 'SELECT updated_at, state FROM executions WHERE execution_id = ?', options.executionId);
  const since = (at: number | null | undefined) => (at === null || at === undefined || at <= restarted ? null : at - restarted);
  const final = execution !== undefined && ['succeeded', 'failed', 'reconciliation'].includes(execution.state) ? execution.updated_at : null;
  return {
    case: options.caseName,
    engine: options.engine,
    killed,
    restartMs: restarted - fired.time,
    workerMs: worker === null ? null : worker - restarted,
    nextStepMs: since(firstRecordAfter(paths.executorDatabase, options.executionId, restarted)),
    finalMs: since(final),
    // A run that had closed before the kill had nothing to resume.
    closedMs: options.closedAtMs === null || options.closedAtMs <= fired.time ? null : options.closedAtMs - restarted,
  };
}

/** One figure as a line of the matrix's output, and as a JSON line in the file RESUME_FILE_ENV names. */
export function recordResumeFigure(figure: ResumeFigure, env: NodeJS.ProcessEnv = process.env): string {
  const ms = (value: number | null) => (value === null ? '—' : `${String(value)} ms`);
  const line = `resume ${figure.engine} ${figure.case}: ${figure.killed} back ${ms(figure.restartMs)} after the kill; then worker ${ms(figure.workerMs)}, next step ${ms(figure.nextStepMs)}, final state ${ms(figure.finalMs)}, run closed ${ms(figure.closedMs)}`;
  const file = env[RESUME_FILE_ENV];
  if (file !== undefined && file !== '') appendFileSync(file, `${JSON.stringify(figure)}\n`);
  return line;
}
