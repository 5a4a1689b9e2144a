import { appendFile, open, rename, rm, truncate, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createLogFollower } from '../../../src/launcher/logs/follow-log.js';
import type { LogComponent } from '../../../src/process/log-files.js';
import { mergeByTime, parseLogLine, sanitizePayload } from '../../../src/launcher/logs/log-lines.js';
import { LOG_CHUNK_BYTES, LOG_MAX_LINE_BYTES, completeLinesEnd, linesBackward } from '../../../src/launcher/logs/read-lines-backward.js';
import { scanLinesContaining } from '../../../src/launcher/logs/scan-lines-containing.js';
import { makeTempDir, removeDir } from '../../support/cli.js';

let dir: string;
beforeEach(async () => {
  dir = await makeTempDir('lexec-log-reading-');
});
afterEach(async () => {
  await removeDir(dir);
});

async function backward(path: string, end?: number): Promise<string[]> {
  const handle = await open(path, 'r');
  try {
    const size = end ?? (await handle.stat()).size;
    const lines: string[] = [];
    for await (const line of linesBackward(handle, size)) lines.push(line);
    return lines;
  } finally {
    await handle.close();
  }
}

describe('reading a log file backwards in chunks', () => {
  it('returns every line, last first, whatever the chunk boundaries (lines of 1 byte to several chunks)', async () => {
    const lines = Array.from({ length: 400 }, (_, index) => `${index}:${'x'.repeat((index * 7919) % 3000)}é`);
    lines.push(`long:${'y'.repeat(LOG_CHUNK_BYTES * 2 - 100)}`, 'last');
    const path = join(dir, 'a.log');
    await writeFile(path, `${lines.join('\n')}\n`);
    // The long line is longer than the cap only when the cap is below two chunks.
    const expected = lines.map((line) => Buffer.from(line).subarray(0, LOG_MAX_LINE_BYTES).toString('utf8'));
    expect(await backward(path)).toEqual(expected.reverse());
  });

  it('yields a trailing fragment without newline, skips empty lines, and stops at a given end', async () => {
    const path = join(dir, 'b.log');
    await writeFile(path, 'one\n\ntwo\nthree-partial');
    expect(await backward(path)).toEqual(['three-partial', 'two', 'one']);
    const handle = await open(path, 'r');
    const end = await completeLinesEnd(handle, (await handle.stat()).size);
    await handle.close();
    expect(end).toBe('one\n\ntwo\n'.length);
    expect(await backward(path, end)).toEqual(['two', 'one']);
  });

  it('keeps the start of a line longer than the cap, so memory stays bounded', async () => {
    const path = join(dir, 'c.log');
    const huge = `START${'z'.repeat(LOG_MAX_LINE_BYTES * 3)}END`;
    await writeFile(path, `before\n${huge}\nafter\n`);
    const lines = await backward(path);
    expect(lines).toHaveLength(3);
    expect(lines[0]).toBe('after');
    expect(lines[1]?.startsWith('START')).toBe(true);
    expect(lines[1]).toHaveLength(LOG_MAX_LINE_BYTES);
    expect(lines[2]).toBe('before');
  });
});

describe('searching a log file for a marker', () => {
  async function scan(path: string, marker: string): Promise<string[]> {
    const handle = await open(path, 'r');
    try {
      const found: string[] = [];
      await scanLinesContaining(handle, (await handle.stat()).size, marker, (line) => found.push(line));
      return found;
    } finally {
      await handle.close();
    }
  }

  it('finds every line holding the marker, in file order, wherever the chunk boundaries fall', async () => {
    // Lines of varied length put marker occurrences across chunk boundaries at many offsets.
    const lines = Array.from({ length: 3000 }, (_, index) => (index % 7 === 0 ? `${'a'.repeat(index % 97)}MARK-${index}${'b'.repeat((index * 31) % 200)}` : `${index}:${'c'.repeat((index * 13) % 150)}`));
    lines.push('tail MARK without newline');
    const path = join(dir, 'scan.log');
    await writeFile(path, lines.join('\n'));
    expect(await scan(path, 'MARK')).toEqual(lines.filter((line) => line.includes('MARK')));
    expect(await scan(path, 'absent')).toEqual([]);
  });

  it('searches a line longer than the cap only up to the cap, and goes on after it', async () => {
    const path = join(dir, 'long.log');
    const early = `MARK-early${'x'.repeat(LOG_MAX_LINE_BYTES * 2)}MARK-late`;
    await writeFile(path, `one MARK\n${early}\ntwo MARK\n`);
    const found = await scan(path, 'MARK');
    expect(found).toHaveLength(3);
    expect(found[0]).toBe('one MARK');
    expect(found[1]).toBe(early.slice(0, LOG_MAX_LINE_BYTES));
    expect(found[2]).toBe('two MARK');
  });
});

describe('log payloads', () => {
  it('are stripped of ANSI/VT sequences and other control characters; tab and Unicode stay', () => {
    const raw = '\u001b[31mred\u001b[0m \u001b]0;title\u0007osc \u009b1mcsi\tend\r\b é ✓';
    expect(sanitizePayload(raw)).toBe('red osc csi\tend é ✓');
  });

  it('parse as JSON objects with sanitised keys and strings; anything else stays plain', () => {
    const line = parseLogLine('executor', JSON.stringify({ level: 50, time: '2026-03-01T12:00:00.000Z', msg: '\u001b[2Jboom', '\u001b[1mkey': 1 }));
    expect(line.parsed).toEqual({ level: 50, time: '2026-03-01T12:00:00.000Z', msg: 'boom', key: 1 });
    expect(line.time).toBe(Date.parse('2026-03-01T12:00:00.000Z'));
    expect(line.level).toBe(50);
    expect(parseLogLine('executor', JSON.stringify({ time: 1700000000123 })).time).toBe(1700000000123);
    for (const plain of ['plain text', '[1,2]', '{not json', '"string"']) {
      expect(parseLogLine('ledger', plain)).toMatchObject({ parsed: null, time: null, text: plain });
    }
  });
});

describe('merging components by time', () => {
  const line = (component: LogComponent, text: string, second: number | null) => parseLogLine(component, second === null ? text : JSON.stringify({ time: second * 1000, text }));
  const texts = (lines: ReturnType<typeof mergeByTime>) => lines.map((entry) => (entry.parsed === null ? entry.text : String(entry.parsed.text)));

  it('interleaves by time, keeps each component in file order, and carries plain lines with their neighbours', () => {
    const ledger = [line('ledger', 'L1', 1), line('ledger', 'L4', 4), line('ledger', 'L7', 7)];
    const executor = [line('executor', 'plain-before', null), line('executor', 'E2', 2), line('executor', 'E5', 5), line('executor', 'plain-after-E5', null)];
    // Out of order within its file: a merge never reorders a component's own lines.
    const sandbox = [line('sandbox', 'S6', 6), line('sandbox', 'S3', 3)];
    expect(texts(mergeByTime([ledger, executor, sandbox]))).toEqual(['L1', 'plain-before', 'E2', 'L4', 'E5', 'plain-after-E5', 'S6', 'S3', 'L7']);
  });

  it('puts a component without any time first, and breaks ties by component order', () => {
    const supervisor = [line('supervisor', 'no time 1', null), line('supervisor', 'no time 2', null)];
    const ledger = [line('ledger', 'L1', 1)];
    const executor = [line('executor', 'E1', 1)];
    expect(texts(mergeByTime([ledger, executor, supervisor]))).toEqual(['no time 1', 'no time 2', 'L1', 'E1']);
  });
});

describe('following a log file', () => {
  const active = () => join(dir, 'executor.log');
  async function rotate(): Promise<void> {
    for (let generation = 3; generation >= 1; generation -= 1) {
      await rename(`${active()}.${generation}`, `${active()}.${generation + 1}`).catch(() => undefined);
    }
    await rename(active(), `${active()}.1`);
  }

  it('reads appended lines, waits for a line to be finished, and follows several rotations between two polls', async () => {
    const follower = createLogFollower(dir, 'executor', null);
    const seen: string[] = [];
    const poll = () => follower.poll((lines) => seen.push(...lines));
    try {
      await poll();
      expect(seen).toEqual([]);
      await writeFile(active(), 'a1\na2\npart');
      await poll();
      expect(seen).toEqual(['a1', 'a2']);
      await appendFile(active(), 'ial\na3\n');
      await rotate();
      await writeFile(active(), 'b1\n');
      await rotate();
      await writeFile(active(), 'c1\nc-unfinished');
      await rotate();
      await writeFile(active(), 'd1\n');
      await poll();
      // The unfinished last line of a rotated file is complete as it is: it gets no more bytes.
      expect(seen).toEqual(['a1', 'a2', 'partial', 'a3', 'b1', 'c1', 'c-unfinished', 'd1']);
      await appendFile(active(), 'd2\n');
      await poll();
      // Truncated in place (not this project's rotation, but seen with copy-truncate tools).
      await truncate(active(), 0);
      await poll();
      await appendFile(active(), 'after-truncation\n');
      await poll();
      expect(seen.slice(8)).toEqual(['d2', 'after-truncation']);
      // Between a rotation's rename and the new file: keep reading the renamed one.
      await appendFile(active(), 'x1\n');
      await rotate();
      await appendFile(`${active()}.1`, 'x2-late\n');
      await poll();
      await writeFile(active(), 'y1\n');
      await poll();
      expect(seen.slice(10)).toEqual(['x1', 'x2-late', 'y1']);
      await rm(`${active()}.4`);
    } finally {
      await follower.close();
    }
  });
});
