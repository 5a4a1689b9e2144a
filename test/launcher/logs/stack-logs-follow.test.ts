import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { BIN, removeDir } from '../../support/cli.js';
import { EXECUTION_A, EXECUTION_B, jsonLine, makeProfileHome, parseLogsJsonLines, writeLog, type ProfileHome } from './log-fixtures.js';

const WRITER = fileURLToPath(new URL('./rotating-writer.mjs', import.meta.url));

interface Running {
  readonly child: ChildProcess;
  readonly stderr: () => string;
  /** The log lines themselves: the command's result, on stdout. */
  readonly stdout: () => string;
  readonly exit: Promise<number | null>;
}

function start(args: readonly string[], env: Record<string, string>): Running {
  const child = spawn(process.execPath, args, { env: { PATH: process.env.PATH ?? '', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  let stdout = '';
  child.stderr.setEncoding('utf8');
  child.stderr.on('data', (chunk: string) => {
    stderr += chunk;
  });
  child.stdout.setEncoding('utf8');
  child.stdout.on('data', (chunk: string) => {
    stdout += chunk;
  });
  const exit = new Promise<number | null>((resolve) => {
    child.once('exit', (code) => {
      resolve(code);
    });
  });
  return { child, stderr: () => stderr, stdout: () => stdout, exit };
}

async function until(what: string, condition: () => boolean, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** The `seq` of every writer line in a follower's output, in order of appearance. */
function sequence(stderr: string): number[] {
  return stderr.split('\n').flatMap((line) => {
    const json = line.slice(line.indexOf('{'));
    if (!json.includes('"writer_line"')) return [];
    return [(JSON.parse(json) as { seq: number }).seq];
  });
}

/** The same from `--follow --json`: every stdout line a JSON Lines record. */
function jsonSequence(stdout: string): number[] {
  // Only complete lines: the last one may still be arriving.
  const complete = stdout.slice(0, stdout.lastIndexOf('\n') + 1);
  return parseLogsJsonLines(complete).lines.flatMap((entry) => (entry.parsed?.event === 'writer_line' ? [entry.parsed.seq as number] : []));
}

const running: Running[] = [];
let home: ProfileHome | undefined;
afterEach(async () => {
  for (const process of running.splice(0)) process.child.kill('SIGKILL');
  if (home !== undefined) await removeDir(home.home);
  home = undefined;
});

describe('lexec stack logs --follow', () => {
  it('prints every line a rotating writer appends exactly once, in order, across rotations and split writes, until SIGINT (also as JSON Lines)', async () => {
    home = await makeProfileHome();
    await writeLog(home.logsDir, 'executor', 0, [jsonLine(1, 'before-1'), jsonLine(2, 'before-2'), jsonLine(3, 'before-3')]);
    const plain = start([BIN, 'stack', 'logs', '--component', 'executor', '--lines', '2', '--follow', '--raw'], home.env);
    const filtered = start([BIN, 'stack', 'logs', '--component', 'all', '--execution-id', EXECUTION_A, '--follow', '--color', 'always', '--raw'], home.env);
    const json = start([BIN, 'stack', 'logs', '--component', 'executor', '--lines', '2', '--follow', '--json'], home.env);
    running.push(plain, filtered, json);
    for (const follower of [plain, filtered]) await until('the follower to start', () => follower.stderr().includes('Following (Ctrl-C to stop)'));
    await until('the JSON follower to print its last lines', () => parseLogsJsonLines(json.stdout()).lines.length === 2);
    expect(parseLogsJsonLines(json.stdout()).lines.map((entry) => entry.parsed?.event)).toEqual(['before-2', 'before-3']);
    expect(plain.stdout()).not.toContain('before-1');
    expect(plain.stdout()).toContain('"event":"before-2"');

    const writer = start([WRITER, home.logsDir, 'executor', EXECUTION_A, EXECUTION_B], {});
    running.push(writer);
    expect(await writer.exit).toBe(0);
    const all = Array.from({ length: 80 }, (_, index) => index + 1);
    await until('every line at the plain follower', () => sequence(plain.stdout()).length >= 80);
    await until('every even line at the filtered follower', () => sequence(filtered.stdout()).length >= 40);
    await until('every line at the JSON follower', () => jsonSequence(json.stdout()).length >= 80);

    for (const follower of [plain, filtered, json]) follower.child.kill('SIGINT');
    expect(await plain.exit).toBe(0);
    expect(await filtered.exit).toBe(0);
    expect(await json.exit).toBe(0);
    // JSON Lines on stdout and nothing else, on either stream.
    expect(jsonSequence(json.stdout())).toEqual(all);
    expect(json.stderr()).toBe('');
    expect(sequence(plain.stdout())).toEqual(all);
    expect(sequence(filtered.stdout())).toEqual(all.filter((seq) => seq % 2 === 0));
    expect(plain.stderr().trimEnd().endsWith('Stopped following.')).toBe(true);
    // Under `all` each line carries its component prefix; the payload after it has no escape.
    const filteredLines = filtered.stdout().split('\n').filter((line) => line.includes('"writer_line"'));
    for (const line of filteredLines) {
      expect(line).toContain('executor');
      expect(line.slice(line.indexOf('{'))).not.toContain('\u001b');
    }
  }, 120_000);
});
