import type { FileHandle } from 'node:fs/promises';

/** Bytes read per step. A log line is far shorter; a 10 MiB file takes 160 steps. */
export const LOG_CHUNK_BYTES = 64 * 1024;

/**
 * Longest line kept whole. A longer one (a child printing a huge blob) is cut to its first
 * LOG_MAX_LINE_BYTES bytes, so memory stays bounded whatever a file holds.
 */
export const LOG_MAX_LINE_BYTES = 64 * 1024;

/**
 * The lines of `[0, end)` of an open file, last line first, read backwards in fixed chunks: the
 * memory used is one chunk plus one line, whatever the file's size. A trailing fragment after
 * the last newline is yielded as a line too (callers that must not see it pass an `end` at a
 * line boundary, see completeLinesEnd). Empty lines are skipped.
 */
export async function* linesBackward(handle: FileHandle, end: number): AsyncGenerator<string> {
  const buffer = Buffer.allocUnsafe(LOG_CHUNK_BYTES);
  // The line being assembled, as pieces from the chunks read so far (front piece first), capped.
  let pieces: Buffer[] = [];
  let piecesLength = 0;
  const prepend = (piece: Buffer) => {
    if (piece.length === 0) return;
    // Copied: `buffer` is reused by the next read.
    pieces.unshift(Buffer.from(piece));
    piecesLength += piece.length;
    // Going backwards the line's start arrives last; keep the start and drop its far end.
    if (piecesLength > LOG_MAX_LINE_BYTES) {
      pieces = [Buffer.concat(pieces, piecesLength).subarray(0, LOG_MAX_LINE_BYTES)];
      piecesLength = LOG_MAX_LINE_BYTES;
    }
  };
  const takeLine = (): string | null => {
    const line = Buffer.concat(pieces, piecesLength).toString('utf8');
    pieces = [];
    piecesLength = 0;
    return line === '' ? null : line;
  };
  let position = end;
  while (position > 0) {
    const size = Math.min(LOG_CHUNK_BYTES, position);
    position -= size;
    const { bytesRead } = await handle.read(buffer, 0, size, position);
    if (bytesRead !== size) throw new Error(`short read of a log file at offset ${position}`);
    const chunk = buffer.subarray(0, size);
    let segmentEnd = size;
    let newline = chunk.lastIndexOf(0x0a);
    while (newline !== -1) {
      prepend(chunk.subarray(newline + 1, segmentEnd));
      const line = takeLine();
      if (line !== null) yield line;
      segmentEnd = newline;
      newline = newline === 0 ? -1 : chunk.lastIndexOf(0x0a, newline - 1);
    }
    prepend(chunk.subarray(0, segmentEnd));
  }
  const first = takeLine();
  if (first !== null) yield first;
}

/**
 * The offset just after the last newline within `[0, size)`, or 0 when there is none: where a
 * follower starts so that a line still being written is printed once, whole.
 */
export async function completeLinesEnd(handle: FileHandle, size: number): Promise<number> {
  const buffer = Buffer.allocUnsafe(LOG_CHUNK_BYTES);
  let position = size;
  while (position > 0) {
    const length = Math.min(LOG_CHUNK_BYTES, position);
    position -= length;
    const { bytesRead } = await handle.read(buffer, 0, length, position);
    const newline = buffer.subarray(0, bytesRead).lastIndexOf(0x0a);
    if (newline !== -1) return position + newline + 1;
  }
  return 0;
}
