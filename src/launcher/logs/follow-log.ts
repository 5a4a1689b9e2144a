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
 * path names another file than the one followed: the new active file is opened first (its handle
 * keeps reading it whatever rotates meanwhile), the followed file (now `.1` or older) is read to
 * its end, then every generation rotated in between (several rotations between two polls), oldest
 * first, each found by its identity wherever the next rotation has moved it, then the new active
 * file from its start — so no line is lost or printed twice, even while the writer rotates again.
 */
export function createLogFollower(logsDir: string, component: LogComponent, start: FollowStart | null): LogFollower {
  let current: Followed | null = start === null ? null : { ...start, partial: Buffer.alloc(0), overflowing: false };
  const activePath = logFilePath(logsDir, component);
  const generationPath = (generation: number) => logFilePath(logsDir, component, generation);

  /** The retained generations' identities, newest (`.1`) first, each once (a file moved during the scan is seen again further on). */
  async function generationIdentities(): Promise<string[]> {
    const seen: string[] = [];
    for (let generation = 1; generation <= LOG_RETAINED; generation += 1) {
      const identity = await identityAt(generationPath(generation));
      if (identity !== null && !seen.includes(identity)) seen.push(identity);
    }
    return seen;
  }

  /** Opens the retained file of this identity wherever it is now; null when it has been rotated away. */
  async function openRetained(identity: string): Promise<Followed | null> {
    for (let attempt = 0; attempt < 3; attempt += 1) {
      for (let generation = 1; generation <= LOG_RETAINED; generation += 1) {
        if ((await identityAt(generationPath(generation))) !== identity) continue;
        const opened = await openFollowed(generationPath(generation));
        if (opened?.identity === identity) return opened;
        // Moved between the look and the open: look again.
        await opened?.handle.close();
        break;
      }
    }
    return null;
  }

  /** Reads, oldest first, the files rotated between `older` (read already) and `newer` (the active file now held open). */
  async function readBetween(older: string, newer: string | null, emit: EmitLines): Promise<void> {
    const identities = await generationIdentities();
    const olderAt = identities.indexOf(older);
    // Not found: rotated away entirely (five rotations between two polls); nothing safe to add.
    if (olderAt === -1) return;
    const newerAt = newer === null ? -1 : identities.indexOf(newer);
    for (const identity of identities.slice(newerAt + 1, olderAt).reverse()) {
      const skipped = await openRetained(identity);
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
      const next = await openFollowed(activePath);
      if (current !== null) {
        const previous = current;
        current = null;
        try {
          await readAppended(previous, emit);
          flushPartial(previous, emit);
          await readBetween(previous.identity, next?.identity ?? null, emit);
        } catch (error) {
          await next?.handle.close();
          throw error;
        } finally {
          await previous.handle.close();
        }
      }
      current = next;
      if (current !== null) await readAppended(current, emit);
    },
    async close() {
      await current?.handle.close();
      current = null;
    },
  };
}
