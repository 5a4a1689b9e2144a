import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createOutput, serializeJsonDocument } from '../../src/terminal/output.js';
import { BugError } from '../../src/errors.js';

function streams(isTTY: boolean, stdoutIsTTY = isTTY) {
  const stdout = Object.assign(new PassThrough(), { isTTY: stdoutIsTTY });
  const stderr = Object.assign(new PassThrough(), { isTTY });
  const read = (stream: PassThrough) => String(stream.read() ?? '');
  return { stdout, stderr, out: () => read(stdout), err: () => read(stderr) };
}

describe('serializeJsonDocument', () => {
  it('writes bigint amounts as exact decimal strings', () => {
    expect(serializeJsonDocument({ amount_units: 9_223_372_036_854_775_807n })).toBe('{"amount_units":"9223372036854775807"}');
  });

  it('strips terminal control sequences from every string', () => {
    expect(serializeJsonDocument({ message: '\u001b[31mred\u001b[39m', nested: ['\u001b[1mbold\u001b[22m'] })).toBe(
      '{"message":"red","nested":["bold"]}',
    );
  });
});

describe('createOutput', () => {
  it('prints exactly one JSON document on stdout and refuses a second', async () => {
    const s = streams(false);
    const output = await createOutput({ jsonMode: true, color: 'always', env: {}, streams: s });
    output.json({ ok: true });
    expect(() => {
      output.json({ ok: true });
    }).toThrow(BugError);
    expect(s.out()).toBe('{"ok":true}\n');
    expect(s.err()).toBe('');
  });

  it('writes the human result to stdout and diagnostics to stderr, each styled only when colour resolves on', async () => {
    const plain = streams(true);
    const noColor = await createOutput({ jsonMode: false, color: 'auto', env: { NO_COLOR: '1' }, streams: plain });
    noColor.line(noColor.style.error('result'));
    noColor.diagnostics.line(noColor.diagnostics.style.error('failed'));
    expect(plain.out()).toBe('result\n');
    expect(plain.err()).toBe('failed\n');

    const coloured = streams(false);
    const forced = await createOutput({ jsonMode: false, color: 'always', env: {}, streams: coloured });
    forced.line(forced.style.error('result'));
    forced.diagnostics.line(forced.diagnostics.style.error('failed'));
    expect(coloured.out()).toBe('\u001b[31mresult\u001b[39m\n');
    expect(coloured.err()).toBe('\u001b[31mfailed\u001b[39m\n');
  });

  it('colours each stream by its own terminal test under auto: a piped result stays plain beside coloured progress', async () => {
    const mixed = streams(true, false);
    const output = await createOutput({ jsonMode: false, color: 'auto', env: { FORCE_COLOR: undefined, TERM: 'xterm-256color' }, streams: mixed });
    expect(output.color).toBe(false);
    expect(output.diagnostics.color).toBe(true);
  });

  it('refuses a human result line under --json: stdout holds the one document', async () => {
    const s = streams(false);
    const output = await createOutput({ jsonMode: true, color: 'never', env: {}, streams: s });
    expect(() => {
      output.line('text');
    }).toThrow(BugError);
    expect(s.out()).toBe('');
  });
});
