import { open } from 'node:fs/promises';
import { stripVTControlCharacters } from 'node:util';
import { logFilePath } from './log-files.js';

/*
 * The last lines of a component's log, for messages such as a start's readiness timeout. The
 * servers never log a secret; as a second line of defence anything shaped like a lexec
 * capability is masked here, and terminal control sequences are removed, so a line printed
 * from a log can neither leak a credential nor drive the operator's terminal.
 */

const TAIL_BYTES = 64 * 1024;
const MAX_LINE_CHARS = 400;
const CAPABILITY = /lexec_[a-z]+_[A-Za-z0-9_-]{43}/g;

/** A log line made safe to print: no control sequences, no capability, bounded length. */
export function safeLogLine(line: string): string {
  // eslint-disable-next-line no-control-regex
  const plain = stripVTControlCharacters(line).replace(/[\u0000-\u0008\u000b-\u001f\u007f]/g, '').replace(CAPABILITY, '[capability hidden]');
  return plain.length > MAX_LINE_CHARS ? `${plain.slice(0, MAX_LINE_CHARS)}…` : plain;
}

async function tailOf(path: string): Promise<string[]> {
  let handle;
  try {
    handle = await open(path, 'r');
  } catch {
    return [];
  }
  try {
    const { size } = await handle.stat();
    const length = Math.min(size, TAIL_BYTES);
    const buffer = Buffer.alloc(length);
    await handle.read(buffer, 0, length, size - length);
    const lines = buffer.toString('utf8').split('\n');
    // The first line is partial when the read started inside the file.
    if (length < size) lines.shift();
    return lines.filter((line) => line.trim() !== '');
  } finally {
    await handle.close();
  }
}

/** Up to `count` last lines of `logs/<component>.log`, continuing into `.1` when the active file is short. */
export async function lastLogLines(logsDir: string, component: string, count: number): Promise<string[]> {
  let lines = await tailOf(logFilePath(logsDir, component));
  if (lines.length < count) lines = [...(await tailOf(logFilePath(logsDir, component, 1))), ...lines];
  return lines.slice(-count).map(safeLogLine);
}
