import { setTimeout as sleep } from 'node:timers/promises';
import { UsageError } from '../../errors.js';
import { createLogFollower, type LogFollower } from './follow-log.js';
import { LOG_COMPONENTS, type LogComponent } from '../../process/log-files.js';
import { belongsToExecution, EXECUTION_ID, mergeByTime, parseLogLine, type AdmissionRejection, type LogLine } from './log-lines.js';
import type { ProfilePaths } from '../home/stack-home.js';
import { tailComponent, type ComponentTail } from './tail-log.js';
import { existingProfilePaths, type ProfileRequest } from '../profiles/existing-profile.js';

/*
 * `lexec stack logs` (docs/stack-logs.md): the last lines of a component's managed log across its
 * rotated files, or of all components merged by time; optionally only one execution's lines;
 * optionally followed until interrupted. Logs are local files, so this works whether the stack
 * runs or not and needs no handoff.
 */

export const LOG_COMPONENT_CHOICES = [...LOG_COMPONENTS, 'all'] as const;
export type LogComponentChoice = (typeof LOG_COMPONENT_CHOICES)[number];

/** Bounds of `--lines` (the upper one also bounds the memory a read uses). */
export const MIN_LOG_LINES = 1;
export const MAX_LOG_LINES = 10_000;

/** How often a follower looks for appended lines and rotations. */
const FOLLOW_POLL_MS = 200;

export interface LogsRequest extends ProfileRequest {
  readonly component: LogComponentChoice;
  readonly lines: number;
  readonly executionId: string | undefined;
  /** `--level`: only JSON lines at this pino level or above (30 info, 40 warn, 50 error …). */
  readonly minLevel?: number | null;
  /** `--since`: only JSON lines whose `time` is at or after this instant (ms since the epoch). */
  readonly since?: number | null;
}

/** The `--level` names and their pino levels. */
export const LOG_LEVELS = { trace: 10, debug: 20, info: 30, warn: 40, error: 50, fatal: 60 } as const;
export type LogLevelName = keyof typeof LOG_LEVELS;

/** The line filter of `--level` and `--since`: a line without the field asked about is left out. */
function lineFilter(request: LogsRequest): ((line: LogLine) => boolean) | null {
  const minLevel = request.minLevel ?? null;
  const since = request.since ?? null;
  if (minLevel === null && since === null) return null;
  return (line) => {
    if (minLevel !== null && !(typeof line.parsed?.level === 'number' && line.parsed.level >= minLevel)) return false;
    if (since !== null) {
      const time = line.parsed?.time;
      const at = typeof time === 'string' ? Date.parse(time) : typeof time === 'number' ? time : Number.NaN;
      if (!(at >= since)) return false;
    }
    return true;
  };
}

/** One line of the result. `line` and `parsed` are free of terminal control sequences. */
export interface LogEntry {
  readonly component: LogComponent;
  readonly line: string;
  /** The line's JSON object, when it is one. */
  readonly parsed?: Readonly<Record<string, unknown>>;
}

export interface LogsResult {
  readonly profile: string;
  readonly component: LogComponentChoice;
  readonly execution_id: string | null;
  readonly logs_dir: string;
  /** Log files found for the components read (0: nothing logged yet). */
  readonly log_files: number;
  /** Oldest first; at most the requested number. */
  readonly lines: readonly LogEntry[];
  /**
   * Distinct `executor_admission_rejected` events in every retained executor file — they carry no
   * execution id and may predate the running process (spec §6 rule 3). Null when not looked for:
   * with `--execution-id`, or for a component other than executor and all.
   */
  readonly admission_rejections: readonly AdmissionRejection[] | null;
}

export interface FollowHandlers {
  readonly signal: AbortSignal;
  /** The initial lines, before anything new. */
  readonly onTail: (result: LogsResult) => void;
  /** Lines appended since, oldest first (merged by time across components within one poll). */
  readonly onLines: (lines: readonly LogEntry[]) => void;
}

function toEntry(line: LogLine): LogEntry {
  return line.parsed === null ? { component: line.component, line: line.text } : { component: line.component, line: line.text, parsed: line.parsed };
}

function checkRequest(request: LogsRequest): string | null {
  if (request.executionId === undefined) return null;
  if (!EXECUTION_ID.test(request.executionId)) {
    throw new UsageError('invalid_flag_value', '--execution-id must be an execution id (exe_ followed by 32 hexadecimal digits, as `lexec run` and the executor API show it).', {
      nextStep: 'Copy the id from `lexec run` output or `GET /v1/executions/{execution_id}`.',
    });
  }
  if (request.component !== 'executor' && request.component !== 'all') {
    throw new UsageError('invalid_flag_value', `--execution-id applies to the executor's log (--component executor or all); ${request.component} lines carry no execution id.`, {
      nextStep: 'Run `lexec stack logs --component executor --execution-id <id>`.',
    });
  }
  return request.executionId;
}

async function readTails(paths: ProfilePaths, request: LogsRequest, executionId: string | null, keepActiveOpen: boolean): Promise<ComponentTail[]> {
  const components = request.component === 'all' ? LOG_COMPONENTS : [request.component];
  const tails: ComponentTail[] = [];
  try {
    for (const component of components) {
      tails.push(
        await tailComponent({
          logsDir: paths.logsDir,
          component,
          lines: request.lines,
          executionId,
          keep: lineFilter(request),
          collectAdmissionRejections: component === 'executor' && executionId === null,
          keepActiveOpen,
        }),
      );
    }
  } catch (error) {
    await Promise.all(tails.flatMap((tail) => (tail.followStart === null ? [] : [tail.followStart.handle.close()])));
    throw error;
  }
  return tails;
}

function resultOf(paths: ProfilePaths, request: LogsRequest, executionId: string | null, tails: readonly ComponentTail[]): LogsResult {
  const merged = mergeByTime(
    tails.map((tail) => tail.lines),
    tails.map((tail) => tail.timeBefore),
  );
  const lookedForRejections = executionId === null && (request.component === 'executor' || request.component === 'all');
  return {
    profile: paths.name,
    component: request.component,
    execution_id: executionId,
    logs_dir: paths.logsDir,
    log_files: tails.reduce((sum, tail) => sum + tail.filesFound, 0),
    lines: merged.slice(Math.max(0, merged.length - request.lines)).map(toEntry),
    admission_rejections: lookedForRejections ? tails.flatMap((tail) => tail.admissionRejections) : null,
  };
}

/** `stack logs` without `--follow`. */
export async function readStackLogs(request: LogsRequest): Promise<LogsResult> {
  const executionId = checkRequest(request);
  const paths = await existingProfilePaths(request);
  return resultOf(paths, request, executionId, await readTails(paths, request, executionId, false));
}

/**
 * `stack logs --follow`: hands the initial lines to `onTail`, then every appended line (through
 * rotations) to `onLines` until `signal` aborts. Returns the initial result.
 */
export async function followStackLogs(request: LogsRequest, handlers: FollowHandlers): Promise<LogsResult> {
  const executionId = checkRequest(request);
  const paths = await existingProfilePaths(request);
  const tails = await readTails(paths, request, executionId, true);
  const keep = lineFilter(request) ?? (() => true);
  const followers: { component: LogComponent; follower: LogFollower }[] = tails.map((tail) => ({
    component: tail.component,
    follower: createLogFollower(paths.logsDir, tail.component, tail.followStart),
  }));
  try {
    const result = resultOf(paths, request, executionId, tails);
    handlers.onTail(result);
    while (!handlers.signal.aborted) {
      const batches: LogLine[][] = [];
      for (const { component, follower } of followers) {
        const batch: LogLine[] = [];
        await follower.poll((raws) => {
          for (const raw of raws) {
            const line = parseLogLine(component, raw);
            if ((executionId === null || belongsToExecution(line, executionId)) && keep(line)) batch.push(line);
          }
        });
        batches.push(batch);
      }
      const appended = mergeByTime(batches);
      if (appended.length > 0) handlers.onLines(appended.map(toEntry));
      await sleep(FOLLOW_POLL_MS, undefined, { signal: handlers.signal }).catch(() => undefined);
    }
    return result;
  } finally {
    await Promise.all(followers.map(({ follower }) => follower.close()));
  }
}
