import { readdir, readFile, stat, writeFile, mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { lastLogLines } from '../../../src/launcher/logs/tail-log.js';
import { LOG_RETAINED, logFilePath } from '../../../src/process/log-files.js';
import { createLineSplitter, cutLine, LOG_MAX_BYTES, openRotatingLog } from '../../../src/process/rotating-log.js';
import { makeTempDir, removeDir } from '../../support/cli.js';

let dir: string;
beforeEach(async () => {
  dir = await makeTempDir('lexec-log-');
});
afterEach(async () => {
  await removeDir(dir);
});

async function lines(path: string): Promise<string[]> {
  return (await readFile(path, 'utf8')).split('\n').slice(0, -1);
}

describe('rotating component log', () => {
  it('is bounded to 10 MiB active plus 4 retained files by default, named <component>.log and .log.1 … .log.4', () => {
    expect(LOG_MAX_BYTES).toBe(10 * 1024 * 1024);
    expect(LOG_RETAINED).toBe(4);
    expect(logFilePath('/l', 'executor')).toBe('/l/executor.log');
    expect(logFilePath('/l', 'executor', 4)).toBe('/l/executor.log.4');
  });

  it('rotates by size between lines: every file holds whole lines, none is over the limit, nothing but the oldest is lost', async () => {
    const logsDir = join(dir, 'logs');
    const log = openRotatingLog({ logsDir, component: 'ledger', maxBytes: 100, retained: 4 });
    const written = Array.from({ length: 60 }, (_, index) => `line ${String(index).padStart(3, '0')} ${'x'.repeat(index % 7)}`);
    for (const line of written) log.writeLine(line);
    log.close();

    expect((await readdir(logsDir)).sort()).toEqual(['ledger.log', 'ledger.log.1', 'ledger.log.2', 'ledger.log.3', 'ledger.log.4']);
    const files = [4, 3, 2, 1, 0].map((generation) => logFilePath(logsDir, 'ledger', generation));
    const kept: string[] = [];
    for (const file of files) {
      expect((await stat(file)).size, file).toBeLessThanOrEqual(100);
      expect((await stat(file)).mode & 0o777).toBe(0o600);
      const content = await lines(file);
      for (const line of content) expect(written).toContain(line);
      kept.push(...content);
    }
    // Oldest first across the files, contiguous, ending with the last line written.
    expect(kept).toEqual(written.slice(written.length - kept.length));
    expect((await stat(logsDir)).mode & 0o777).toBe(0o700);
  });

  it('continues an existing file across restarts of the writer and rotates when it is already full', async () => {
    const logsDir = join(dir, 'logs');
    await mkdir(logsDir, { recursive: true });
    await writeFile(logFilePath(logsDir, 'sandbox'), `${'a'.repeat(95)}\n`);
    const log = openRotatingLog({ logsDir, component: 'sandbox', maxBytes: 100 });
    log.writeLine('next');
    log.close();
    expect(await lines(logFilePath(logsDir, 'sandbox', 1))).toEqual(['a'.repeat(95)]);
    expect(await lines(logFilePath(logsDir, 'sandbox'))).toEqual(['next']);
  });

  it('cuts a single line longer than a whole file (with a marker) instead of breaking the bound', async () => {
    const logsDir = join(dir, 'logs');
    const log = openRotatingLog({ logsDir, component: 'executor', maxBytes: 100 });
    log.writeLine('é'.repeat(200));
    log.close();
    const [line = ''] = await lines(logFilePath(logsDir, 'executor'));
    expect(Buffer.byteLength(`${line}\n`)).toBeLessThanOrEqual(100);
    expect(line).toMatch(/^é+ \[lexec: line cut\]$/);
    expect(cutLine('short', 100)).toBe('short');
  });
});

describe('line splitter', () => {
  it('joins chunks split mid-line, drops CR before LF, flushes a final partial line', () => {
    const out: string[] = [];
    const splitter = createLineSplitter((line) => out.push(line));
    splitter.push('{"a":');
    splitter.push('1}\r\nsecond\nthi');
    splitter.push('rd');
    expect(out).toEqual(['{"a":1}', 'second']);
    splitter.flush();
    expect(out).toEqual(['{"a":1}', 'second', 'third']);
  });

  it('cuts a line that grows without a newline and drops its remainder, so memory stays bounded', () => {
    const out: string[] = [];
    const splitter = createLineSplitter((line) => out.push(line), 10);
    splitter.push('0123456789abc');
    splitter.push('more of the same line');
    splitter.push('\nnext\n');
    expect(out).toEqual(['0123456789 [lexec: line cut]', 'next']);
  });
});

describe('log tail', () => {
  it('returns the last lines, reaching into .1 when the active file is short', async () => {
    const logsDir = join(dir, 'logs');
    const log = openRotatingLog({ logsDir, component: 'ledger', maxBytes: 40 });
    for (let index = 0; index < 8; index += 1) log.writeLine(`entry number ${index}`);
    log.close();
    expect(await lastLogLines(logsDir, 'ledger', 3)).toEqual(['entry number 5', 'entry number 6', 'entry number 7']);
    expect(await lastLogLines(logsDir, 'executor', 3)).toEqual([]);
  });

  it('quotes lines sanitised like stack logs prints them, and cut at 400 characters', async () => {
    const logsDir = join(dir, 'logs');
    const log = openRotatingLog({ logsDir, component: 'executor', maxBytes: 1_000_000 });
    log.writeLine(`\u001b[31mrefused\u001b[0m lexec_caller_${'B'.repeat(43)}`);
    log.writeLine('y'.repeat(1000));
    log.close();
    const [first, second] = await lastLogLines(logsDir, 'executor', 2);
    expect(first).toBe('refused [capability hidden]');
    expect(second).toBe(`${'y'.repeat(400)}…`);
  });
});
