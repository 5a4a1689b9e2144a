import type { FileHandle } from 'node:fs/promises';
import { closeLogChain, openLogChain } from './log-chain.js';
import type { LogComponent } from '../../process/log-files.js';
import { ADMISSION_REJECTED_EVENT, belongsToExecution, createAdmissionRejectionCollector, parseLogLine, type AdmissionRejection, type LogLine } from './log-lines.js';
import { completeLinesEnd, linesBackward } from './read-lines-backward.js';
import { scanLinesContaining } from './scan-lines-containing.js';

export interface TailRequest {
  readonly logsDir: string;
  readonly component: LogComponent;
  /** How many lines to return, at most. */
  readonly lines: number;
  /** Only lines whose `execution_id` is this one. */
  readonly executionId: string | null;
  /** Only lines this keeps (`--level`, `--since`); null keeps every line. */
  readonly keep?: ((line: LogLine) => boolean) | null;
  /** Also scan every retained file for `executor_admission_rejected` events. */
  readonly collectAdmissionRejections: boolean;
  /** Keep the active file open for a follower, positioned after its last complete line. */
  readonly keepActiveOpen: boolean;
}

/** Where a follower resumes: the active file as it was read, and the offset read up to. */
export interface FollowStart {
  readonly handle: FileHandle;
  readonly identity: string;
  readonly offset: number;
}

export interface ComponentTail {
  readonly component: LogComponent;
  /** Oldest first. */
  readonly lines: readonly LogLine[];
  /** Files of the chain that exist (0: nothing logged yet). */
  readonly filesFound: number;
  readonly admissionRejections: readonly AdmissionRejection[];
  /**
   * When none of `lines` has a time (a crash trace at the end of a log): the time of the last
   * timed line before them, so a merge places them after it rather than before everything; null
   * otherwise or when there is none.
   */
  readonly timeBefore: number | null;
  /** Set when `keepActiveOpen` and the active file exists; the caller owns (closes) the handle. */
  readonly followStart: FollowStart | null;
}

/**
 * The last lines of one component across its rotated files. Without a filter the files are read
 * newest first, each backwards in chunks, stopping as soon as enough lines are found. With an
 * execution id, or for admission rejections, every retained file is searched forward for the id
 * or event name by byte search and only the matching lines are decoded. Either way only the
 * requested lines (at most 10,000) and one chunk are in memory, never a file.
 */
export async function tailComponent(request: TailRequest): Promise<ComponentTail> {
  const files = await openLogChain(request.logsDir, request.component);
  let lines: LogLine[] = [];
  const rejections = createAdmissionRejectionCollector();
  let followStart: FollowStart | null = null;
  let timeBefore: number | null = null;
  try {
    // Newest first; a follower resumes after the active file's last complete line.
    const ends: number[] = [];
    for (const file of files) {
      const followed = request.keepActiveOpen && file.generation === 0;
      const end = followed ? await completeLinesEnd(file.handle, file.size) : file.size;
      if (followed) followStart = { handle: file.handle, identity: file.identity, offset: end };
      ends.push(end);
    }
    const oldestFirst = files.map((file, index) => ({ handle: file.handle, end: ends[index] ?? 0 })).reverse();
    const { executionId } = request;
    const keep = request.keep ?? (() => true);
    if (executionId !== null) {
      for (const { handle, end } of oldestFirst) {
        await scanLinesContaining(handle, end, executionId, (raw) => {
          const line = parseLogLine(request.component, raw);
          if (!belongsToExecution(line, executionId) || !keep(line)) return;
          lines.push(line);
          // Keep only the most recent matches: memory stays bounded by the requested count.
          if (lines.length >= 2 * request.lines) lines = lines.slice(-request.lines);
        });
      }
      lines = lines.slice(-request.lines);
    } else {
      // Past a window without any timed line, read on (a bounded number of lines) for the last
      // timed line before it: when its plain lines were written.
      let timed = false;
      let past = 0;
      scan: for (const [index, file] of files.entries()) {
        for await (const raw of linesBackward(file.handle, ends[index] ?? 0)) {
          const line = parseLogLine(request.component, raw);
          if (lines.length >= request.lines) {
            if (line.time !== null) {
              timeBefore = line.time;
              break scan;
            }
            if ((past += 1) >= MAX_LINES_PAST_WINDOW) break scan;
            continue;
          }
          if (!keep(line)) continue;
          lines.push(line);
          timed ||= line.time !== null;
          if (lines.length >= request.lines && timed) break scan;
        }
      }
      lines.reverse();
    }
    if (request.collectAdmissionRejections) {
      for (const { handle, end } of oldestFirst) {
        await scanLinesContaining(handle, end, ADMISSION_REJECTED_EVENT, (raw) => {
          rejections.add(parseLogLine(request.component, raw));
        });
      }
    }
  } catch (error) {
    await closeLogChain(files);
    throw error;
  }
  await closeLogChain(files.filter((file) => file.handle !== followStart?.handle));
  return {
    component: request.component,
    lines,
    filesFound: files.length,
    admissionRejections: rejections.result(),
    timeBefore,
    followStart,
  };
}

/** How far past the requested lines a tail reads for the time of a window of plain lines. */
const MAX_LINES_PAST_WINDOW = 10_000;

/** How much of one line a message quotes (a start's readiness timeout, a supervisor that exited). */
const QUOTED_LINE_CHARS = 400;

/**
 * Up to `count` last lines of a component's log across its rotated files, sanitised like every
 * line `stack logs` prints and cut at 400 characters, for quoting in an error message.
 */
export async function lastLogLines(logsDir: string, component: LogComponent, count: number): Promise<string[]> {
  const tail = await tailComponent({ logsDir, component, lines: count, executionId: null, collectAdmissionRejections: false, keepActiveOpen: false });
  return tail.lines.map(({ text }) => (text.length > QUOTED_LINE_CHARS ? `${text.slice(0, QUOTED_LINE_CHARS)}…` : text));
}
