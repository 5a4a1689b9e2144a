import { mkdtemp, readFile, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { execa } from 'execa';
import { expect } from 'vitest';

export const PACKAGE_ROOT = fileURLToPath(new URL('../..', import.meta.url));
export const BIN = join(PACKAGE_ROOT, 'bin', 'run.js');

/**
 * In the environment of every lexec process the harness starts (CLI runs, servers, stacks): Node's
 * on-disk compile cache, so the same modules are compiled once per machine rather than once per
 * process — a suite run starts thousands. Transparent to what is tested: keyed by each file's
 * content and the V8 version, and a cache it cannot use is ignored.
 */
export const COMPILE_CACHE_ENV: Readonly<Record<string, string>> = { NODE_COMPILE_CACHE: join(tmpdir(), 'lexec-test-node-compile-cache') };

export interface CliRun {
  readonly exitCode: number;
  readonly stdout: string;
  readonly stderr: string;
}

export interface CliOptions {
  /** Variables added to a minimal environment (PATH and HOME only), so the machine's NO_COLOR etc. never leak in. */
  readonly env?: Record<string, string>;
  readonly cwd?: string;
  readonly home?: string;
  /**
   * Make one stream a pseudo-terminal (util-linux `script`); the other is redirected to a file
   * and read back, so the two stay apart as they do on a pipe.
   */
  readonly tty?: 'stdout' | 'stderr';
  readonly node?: string;
  readonly timeoutMs?: number;
}

function shellQuote(word: string): string {
  return `'${word.replaceAll("'", "'\\''")}'`;
}

/** Runs the real, built `lexec` binary in a child process. */
export async function runLexec(args: readonly string[], options: CliOptions = {}): Promise<CliRun> {
  const env = { ...COMPILE_CACHE_ENV, PATH: process.env.PATH ?? '', HOME: options.home ?? tmpdir(), ...options.env };
  const node = options.node ?? process.execPath;
  const execaOptions = { env, extendEnv: false, cwd: options.cwd, reject: false, timeout: options.timeoutMs ?? 20_000, stdin: 'ignore' } as const;
  if (options.tty === undefined) {
    const result = await execa(node, [BIN, ...args], execaOptions);
    if (result.timedOut) throw new Error(`lexec ${args.join(' ')} timed out`);
    return { exitCode: result.exitCode ?? -1, stdout: result.stdout, stderr: result.stderr };
  }
  const dir = await makeTempDir('lexec-tty-');
  try {
    const other = join(dir, 'other-stream');
    const redirect = options.tty === 'stdout' ? `2>${shellQuote(other)}` : `>${shellQuote(other)}`;
    const line = `${[node, BIN, ...args].map(shellQuote).join(' ')} ${redirect}`;
    const result = await execa('script', ['-qefc', line, '/dev/null'], execaOptions);
    if (result.timedOut) throw new Error(`lexec ${args.join(' ')} timed out`);
    const terminal = result.stdout.replaceAll('\r\n', '\n');
    const redirected = await readFile(other, 'utf8');
    return {
      exitCode: result.exitCode ?? -1,
      stdout: options.tty === 'stdout' ? terminal : redirected,
      stderr: options.tty === 'stderr' ? terminal : redirected,
    };
  } finally {
    await removeDir(dir);
  }
}

/** A fresh temporary directory; remove it with `removeDir`. */
export async function makeTempDir(prefix = 'lexec-test-'): Promise<string> {
  return mkdtemp(join(tmpdir(), prefix));
}

export async function removeDir(path: string): Promise<void> {
  await rm(path, { recursive: true, force: true });
}

/** Every entry under `dir`, recursively, as relative paths (for "nothing was created" checks). */
export async function listTree(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { recursive: true });
  return entries.map(String).sort();
}

// eslint-disable-next-line no-control-regex
export const ANSI = /\u001b\[[0-9;]*m/;

/** The error envelope of a `--json` command that failed. */
export interface CliFailure {
  readonly kind: string;
  readonly code: string;
  readonly message: string;
  readonly next_step: string;
  readonly issues?: readonly { path: string; message: string }[];
}

/** Asserts that a `--json` run succeeded (exit 0) and returns its `result`. */
export function expectResult(run: CliRun): unknown {
  expect(run.exitCode, run.stderr + run.stdout).toBe(0);
  return (JSON.parse(run.stdout) as { result: unknown }).result;
}

/** Asserts that a `--json` run failed with `exitCode` and error `code`, and returns the error. */
export function expectFailure(run: CliRun, exitCode: number, code: string): CliFailure {
  expect(run.exitCode, run.stderr + run.stdout).toBe(exitCode);
  const error = (JSON.parse(run.stdout) as { error: CliFailure }).error;
  expect(error.code).toBe(code);
  return error;
}
