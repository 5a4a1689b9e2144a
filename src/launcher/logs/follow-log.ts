import { stat, type FileHandle } from 'node:fs/promises';
import { errorCode } from '../../errors.js';
import { fileIdentity, openIfPresent } from './log-chain.js';
import { LOG_RETAINED, logFilePath, type LogComponent } from '../../process/log-files.js';
import { LOG_CHUNK_BYTES, LOG_MAX_LINE_BYTES } from './read-lines-backward.js';
import type { FollowStart } from './tail-log.js';

/** Receives the complete raw lines found by one step, oldest first. */
export type EmitLines = (lines: string[]) => void;

export interface LogFollower {
  /** Reads what was appended since the last poll, following the active file across rotations. */
  poll(emit: EmitLines): Promise<void>;
  close(): Promise<void>;
}

interface Followed {
  readonly handle: FileHandle;
  readonly identity: string;
  offset: number;
  /** Bytes of a line whose newline has not been written yet. */
  partial: Buffer;
  /** The current line passed LOG_MAX_LINE_BYTES: its first bytes were emitted, the rest is dropped. */
  overflowing: boolean;
}

async function identityAt(path: string): Promise<string | null> {
  try {
    return fileIdentity(await stat(path));
  } catch (error) {
    if (errorCode(error) === 'ENOENT') return null;
    throw error;
  }
}

/** Splits newly read bytes into complete lines; an unfinished one waits in `partial`. */
function takeLines(followed: Followed, chunk: Buffer): string[] {
  const lines: string[] = [];
  let start = 0;
  for (let newline = chunk.indexOf(0x0a); newline !== -1; newline = chunk.indexOf(0x0a, start)) {
    const piece = chunk.subarray(start, newline);
    if (!followed.overflowing) {
      const line = Buffer.concat([followed.partial, piece]).subarray(0, LOG_MAX_LINE_BYTES).toString('utf8');
      if (line !== '') lines.push(line);
    }
    followed.partial = Buffer.alloc(0);
    followed.overflowing = false;
    start = newline + 1;
  }
  if (!followed.overflowing) followed.partial = Buffer.concat([followed.partial, chunk.subarray(start)]);
  if (followed.partial.length > LOG_MAX_LINE_BYTES) {
    lines.push(followed.partial.subarray(0, LOG_MAX_LINE_BYTES).toString('utf8'));
    followed.partial = Buffer.alloc(0);
    followed.overflowing = true;
  }
  return lines;
}

/** Reads a followed file from its offset to its current end, a chunk at a time. */
async function readAppended(followed: Followed, emit: EmitLines): Promise<void> {
  const { size } = await followed.handle.stat();
  if (size < followed.offset) {
    // Truncated in place: whatever is there now is new.
    followed.offset = 0;
    followed.partial = Buffer.alloc(0);
    followed.overflowing = false;
  }
  const buffer = Buffer.allocUnsafe(LOG_CHUNK_BYTES);
  while (followed.offset < size) {
    const { bytesRead } = await followed.handle.read(buffer, 0, Math.min(LOG_CHUNK_BYTES, size - followed.offset), followed.offset);
    if (bytesRead === 0) break;
    followed.offset += bytesRead;
    const lines = takeLines(followed, buffer.subarray(0, bytesRead));
    if (lines.length > 0) emit(lines);
  }
}

/** A finished file's last line has no newline yet will get none: it is complete as it is. */
function flushPartial(followed: Followed, emit: EmitLines): void {
  const line = followed.overflowing ? '' : followed.partial.toString('utf8');
  followed.partial = Buffer.alloc(0);
  if (line !== '') emit([line]);
}

async function openFollowed(path: string): Promise<Followed | null> {
  const handle = await openIfPresent(path);
  if (handle === null) return null;
  return { handle, identity: fileIdentity(await handle.stat()), offset: 0, partial: Buffer.alloc(0), overflowing: false };
}

/**
 * Follows one component's active log file by polling. A rotation is recognised when the active
 * path names another file than the one followed: the followed file (now `.1`) is read to its
 * end first, then any generation rotated in between (several rotations between two polls), then
 * the new active file from its start — so no line is lost or printed twice.
 */
export function createLogFollower(logsDir: string, component: LogComponent, start: FollowStart | null): LogFollower {
  let current: Followed | null = start === null ? null : { ...start, partial: Buffer.alloc(0), overflowing: false };
  const activePath = logFilePath(logsDir, component);

  async function readSkippedGenerations(previous: Followed, emit: EmitLines): Promise<void> {
    let previousGeneration = 0;
    for (let generation = 1; generation <= LOG_RETAINED && previousGeneration === 0; generation += 1) {
      if ((await identityAt(logFilePath(logsDir, component, generation))) === previous.identity) previousGeneration = generation;
    }
    // Not found: rotated away entirely (five rotations between two polls); nothing safe to add.
    for (let generation = previousGeneration - 1; generation >= 1; generation -= 1) {
      const skipped = await openFollowed(logFilePath(logsDir, component, generation));
      if (skipped === null) continue;
      try {
        await readAppended(skipped, emit);
        flushPartial(skipped, emit);
      } finally {
        await skipped.handle.close();
      }
    }
  }

  return {
    async poll(emit) {
      if (current !== null) await readAppended(current, emit);
      const activeIdentity = await identityAt(activePath);
      // No active file: nothing logged yet, or a rotation between its rename and the new file.
      if (activeIdentity === null || activeIdentity === current?.identity) return;
      if (current !== null) {
        const previous = current;
        current = null;
        try {
          await readAppended(previous, emit);
          flushPartial(previous, emit);
          await readSkippedGenerations(previous, emit);
        } finally {
          await previous.handle.close();
        }
      }
      current = await openFollowed(activePath);
      if (current !== null) await readAppended(current, emit);
    },
    async close() {
      await current?.handle.close();
      current = null;
    },
  };
}
