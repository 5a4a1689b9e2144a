import { closeSync, fstatSync, ftruncateSync, mkdirSync, openSync, renameSync, writeSync } from 'node:fs';
import { errorCode } from '../errors.js';
import { tightenOpenFile } from '../storage/private-state.js';
import { LOG_RETAINED, logFilePath } from './log-files.js';

/*
 * The bounded per-component logs of a managed stack (spec §6 rule 4; docs/stack-runtime.md
 * "Logs"), as the supervisor writes them: the active file `logs/<component>.log` holds at most
 * LOG_MAX_BYTES, then it is rotated into the retained generations (naming: log-files.ts).
 *
 * A line is the unit: rotation happens between two lines, never inside one, so every file holds
 * whole lines and a reader can parse each file on its own. Writes are synchronous on purpose:
 * the supervisor is a dedicated process, and a synchronous append keeps the lines of its
 * children in the order they arrived and loses nothing when it is stopped.
 */

/** Largest active file: 10 MiB. */
export const LOG_MAX_BYTES = 10 * 1024 * 1024;
/** Longest line kept whole; a longer one is cut (with a marker) so one line can never exceed a file. */
export const LOG_MAX_LINE_BYTES = 64 * 1024;

const CUT_MARKER = ' [lexec: line cut]';

export interface RotatingLog {
  /** Appends one line (a newline is added); rotates first if the line would not fit. Ignored once closed. */
  writeLine(line: string): void;
  /** Idempotent. */
  close(): void;
}

export interface RotatingLogOptions {
  readonly logsDir: string;
  readonly component: string;
  readonly maxBytes?: number;
  readonly retained?: number;
}

/** Cuts a line to at most `maxBytes` UTF-8 bytes (marker included), never inside a character. */
export function cutLine(line: string, maxBytes: number): string {
  if (Buffer.byteLength(line) <= maxBytes) return line;
  const room = Math.max(0, maxBytes - Buffer.byteLength(CUT_MARKER));
  // toString drops a trailing partial character as U+FFFD; strip that replacement.
  const kept = Buffer.from(line).subarray(0, room).toString('utf8').replace(/\uFFFD$/, '');
  return `${kept}${CUT_MARKER}`;
}

/**
 * Opens (creating, 0600 in a 0700 directory) the active log file of one component for appending.
 * The size limit counts bytes already in the file, so a restarted supervisor continues where
 * the previous one stopped (spec §6 rule 3: managed logs append across process starts).
 */
export function openRotatingLog(options: RotatingLogOptions): RotatingLog {
  const maxBytes = options.maxBytes ?? LOG_MAX_BYTES;
  const retained = options.retained ?? LOG_RETAINED;
  const active = logFilePath(options.logsDir, options.component);
  mkdirSync(options.logsDir, { recursive: true, mode: 0o700 });
  let fd = openSync(active, 'a', 0o600);
  // A log an older release created 0644 becomes private too (rotated ones keep the mode they had).
  tightenOpenFile(fd);
  let size = fstatSync(fd).size;
  let closed = false;

  function rotate(): void {
    closeSync(fd);
    for (let generation = retained - 1; generation >= 1; generation -= 1) {
      try {
        renameSync(logFilePath(options.logsDir, options.component, generation), logFilePath(options.logsDir, options.component, generation + 1));
      } catch (error) {
        if (errorCode(error) !== 'ENOENT') throw error;
      }
    }
    // With retained = 0 the active file is simply replaced.
    if (retained > 0) renameSync(active, logFilePath(options.logsDir, options.component, 1));
    fd = openSync(active, retained > 0 ? 'a' : 'w', 0o600);
    size = 0;
  }

  return {
    writeLine(line) {
      // A child's last lines can arrive after its log was closed (its pipe held open by a
      // grandchild); they are dropped rather than written to a closed descriptor.
      if (closed) return;
      const bytes = Buffer.from(`${cutLine(line, Math.min(LOG_MAX_LINE_BYTES, maxBytes - 1))}\n`);
      if (size > 0 && size + bytes.length > maxBytes) rotate();
      let offset = 0;
      try {
        while (offset < bytes.length) offset += writeSync(fd, bytes, offset);
      } catch (error) {
        // A write cut short (ENOSPC) takes back what it wrote, so the file never holds half a
        // line that the next line would be glued to (issue 26: a log line cut mid-JSON).
        if (offset > 0) {
          try {
            ftruncateSync(fd, size);
          } catch {
            // not even that: the file keeps the partial line
          }
        }
        throw error;
      }
      size += bytes.length;
    },
    close() {
      if (closed) return;
      closed = true;
      closeSync(fd);
    },
  };
}

/**
 * Turns a stream of text chunks into whole lines. A chunk may end mid-line; the rest is kept
 * until its newline arrives or `flush` is called (the stream ended). A line that grows past
 * `maxChars` without a newline is emitted cut and the remainder up to its newline is dropped,
 * so a child writing without newlines cannot make the supervisor buffer without bound.
 */
export function createLineSplitter(onLine: (line: string) => void, maxChars = LOG_MAX_LINE_BYTES): { push(chunk: string): void; flush(): void } {
  let partial = '';
  let dropping = false;
  return {
    push(chunk) {
      const parts = chunk.split('\n');
      const last = parts.pop() ?? '';
      for (const part of parts) {
        const line = (partial + part).replace(/\r$/, '');
        if (!dropping) onLine(line);
        partial = '';
        dropping = false;
      }
      if (dropping) return;
      partial += last;
      if (partial.length > maxChars) {
        onLine(`${partial.slice(0, maxChars)}${CUT_MARKER}`);
        partial = '';
        dropping = true;
      }
    },
    flush() {
      if (partial !== '' && !dropping) onLine(partial.replace(/\r$/, ''));
      partial = '';
      dropping = false;
    },
  };
}
