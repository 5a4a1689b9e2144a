import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ANSI, makeTempDir, removeDir, runLexec } from '../support/cli.js';

/*
 * Spec §8 Operations 8 and ARCHITECTURE.md "CLI conventions", proven on the real binary under
 * every combination of --color, NO_COLOR, FORCE_COLOR, TERM and pipe-or-terminal.
 */

type Flag = 'auto' | 'always' | 'never';
interface Combination {
  flag: Flag;
  NO_COLOR: string | undefined;
  FORCE_COLOR: string | undefined;
  TERM: string;
  tty: boolean;
}

const combinations: Combination[] = [];
for (const flag of ['auto', 'always', 'never'] as const)
  for (const NO_COLOR of [undefined, '', '1'])
    for (const FORCE_COLOR of [undefined, '0', '1'])
      for (const TERM of ['xterm-256color', 'dumb'])
        for (const tty of [false, true]) combinations.push({ flag, NO_COLOR, FORCE_COLOR, TERM, tty });

/** The documented rule, stated independently of the implementation. */
function colourExpected(c: Combination): boolean {
  if (c.flag !== 'auto') return c.flag === 'always';
  if (c.NO_COLOR) return false;
  if (c.FORCE_COLOR !== undefined) return c.FORCE_COLOR !== '0';
  if (c.TERM === 'dumb') return false;
  return c.tty;
}

function envOf(c: Combination): Record<string, string> {
  const env: Record<string, string> = { TERM: c.TERM };
  if (c.NO_COLOR !== undefined) env.NO_COLOR = c.NO_COLOR;
  if (c.FORCE_COLOR !== undefined) env.FORCE_COLOR = c.FORCE_COLOR;
  return env;
}

const label = (c: Combination) =>
  `--color ${c.flag}, NO_COLOR=${String(c.NO_COLOR)}, FORCE_COLOR=${String(c.FORCE_COLOR)}, TERM=${c.TERM}, ${c.tty ? 'terminal' : 'pipe'}`;

describe.concurrent('human output colour', () => {
  it.each(combinations.map((c) => [label(c), c] as const))('%s', async (_name, c) => {
    // The human result goes to stdout, so that is the stream that is a terminal or a pipe.
    const run = await runLexec(['version', '--color', c.flag], { env: envOf(c), tty: c.tty ? 'stdout' : undefined });
    expect(run.exitCode).toBe(0);
    expect(run.stderr).toBe('');
    expect(run.stdout).toContain('contract  v4.5');
    expect(ANSI.test(run.stdout)).toBe(colourExpected(c));
  });
});

describe.concurrent('--json output', () => {
  it.each(combinations.map((c) => [label(c), c] as const))('%s: exactly one ANSI-free JSON document', async (_name, c) => {
    // The JSON document goes to stdout, so that is the stream that is a terminal or a pipe.
    const run = await runLexec(['version', '--json', '--color', c.flag], { env: envOf(c), tty: c.tty ? 'stdout' : undefined });
    expect(run.exitCode).toBe(0);
    expect(ANSI.test(run.stdout)).toBe(false);
    expect(run.stderr).toBe('');
    expect(run.stdout.trim().split('\n')).toHaveLength(1);
    const document = JSON.parse(run.stdout) as { ok: boolean; command: string };
    expect(document).toMatchObject({ ok: true, command: 'version' });
  });
});

describe('error output', () => {
  let dir: string;
  let badConfig: string;

  beforeAll(async () => {
    dir = await makeTempDir();
    badConfig = join(dir, 'executor.json');
    await writeFile(badConfig, JSON.stringify({ schema_version: 3, surprise: 1 }));
  });

  afterAll(async () => {
    await removeDir(dir);
  });

  it('a failure under --json --color always on a terminal is one ANSI-free document', async () => {
    const run = await runLexec(['executor', 'validate-config', '--config', badConfig, '--json', '--color', 'always'], {
      tty: 'stdout',
      env: { FORCE_COLOR: '3' },
    });
    expect(run.exitCode).toBe(1);
    expect(ANSI.test(run.stdout)).toBe(false);
    expect(run.stderr).toBe('');
    expect(JSON.parse(run.stdout)).toMatchObject({ ok: false, error: { code: 'config_invalid' } });
  });

  it('a human failure goes to stderr, coloured only when asked', async () => {
    const plain = await runLexec(['executor', 'validate-config', '--config', badConfig]);
    expect(plain.stdout).toBe('');
    expect(plain.stderr).toContain('surprise: unknown field');
    expect(ANSI.test(plain.stderr)).toBe(false);
    const coloured = await runLexec(['executor', 'validate-config', '--config', badConfig, '--color=always']);
    expect(coloured.stdout).toBe('');
    expect(ANSI.test(coloured.stderr)).toBe(true);
  });

  it('the default is auto', async () => {
    const onTerminal = await runLexec(['version'], { tty: 'stdout', env: { TERM: 'xterm-256color' } });
    expect(ANSI.test(onTerminal.stdout)).toBe(true);
    const onPipe = await runLexec(['version'], { env: { TERM: 'xterm-256color' } });
    expect(ANSI.test(onPipe.stdout)).toBe(false);
  });

  it('each stream is coloured by its own terminal test: a piped result stays plain while errors on a terminal are coloured', async () => {
    const piped = await runLexec(['executor', 'validate-config', '--config', badConfig], { tty: 'stderr', env: { TERM: 'xterm-256color' } });
    expect(piped.stdout).toBe('');
    expect(ANSI.test(piped.stderr)).toBe(true);
    const result = await runLexec(['version'], { tty: 'stderr', env: { TERM: 'xterm-256color' } });
    expect(result.stdout).toContain('contract  v4.5');
    expect(ANSI.test(result.stdout)).toBe(false);
  });

  it('$(lexec version) captures the result: the human result is on stdout', async () => {
    const run = await runLexec(['version']);
    expect(run.stderr).toBe('');
    expect(run.stdout.split('\n')[0]).toMatch(/^lexec v\d+\.\d+\.\d+/);
  });
});
