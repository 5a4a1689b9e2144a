import type { FileHandle } from 'node:fs/promises';
import { LOG_CHUNK_BYTES, LOG_MAX_LINE_BYTES } from './read-lines-backward.js';

/**
 * Calls `visit` with every line of `[0, end)` that contains `marker`, in file order. Reads forward
 * in fixed chunks and looks for the marker with a byte search, so only matching lines are ever
 * decoded: a full 10 MiB file costs one pass of memchr-speed searching, and the memory used is
 * one chunk plus one line. A line longer than LOG_MAX_LINE_BYTES is only searched (and kept) up
 * to that length.
 */
export async function scanLinesContaining(handle: FileHandle, end: number, marker: string, visit: (line: string) => void): Promise<void> {
  const needle = Buffer.from(marker, 'utf8');
  // One buffer for the whole scan: the unfinished line carried over, then the next chunk read
  // right after it. Allocating per chunk would leave megabytes of garbage for the collector.
  const work = Buffer.allocUnsafe(LOG_MAX_LINE_BYTES + LOG_CHUNK_BYTES);
  let carried = 0;
  // The current line passed the cap: the rest of it, up to its newline, is skipped.
  let skipping = false;
  const searchLines = (region: Buffer) => {
    for (let hit = region.indexOf(needle); hit !== -1; ) {
      const start = region.lastIndexOf(0x0a, hit) + 1;
      const newline = region.indexOf(0x0a, hit);
      visit(region.toString('utf8', start, newline === -1 ? region.length : newline));
      hit = newline === -1 ? -1 : region.indexOf(needle, newline + 1);
    }
  };
  for (let position = 0; position < end; ) {
    const { bytesRead } = await handle.read(work, carried, Math.min(LOG_CHUNK_BYTES, end - position), position);
    if (bytesRead === 0) break;
    position += bytesRead;
    const data = work.subarray(0, carried + bytesRead);
    let start = 0;
    if (skipping) {
      const newline = data.indexOf(0x0a);
      if (newline === -1) continue;
      skipping = false;
      start = newline + 1;
    }
    const lastNewline = data.lastIndexOf(0x0a);
    if (lastNewline >= start) {
      searchLines(data.subarray(start, lastNewline));
      start = lastNewline + 1;
    }
    const rest = data.length - start;
    if (rest > LOG_MAX_LINE_BYTES) {
      searchLines(data.subarray(start, start + LOG_MAX_LINE_BYTES));
      carried = 0;
      skipping = true;
    } else {
      work.copyWithin(0, start, data.length);
      carried = rest;
    }
  }
  if (carried > 0 && !skipping) searchLines(work.subarray(0, carried));
}
