import { spawn } from 'node:child_process';
import { BIN, COMPILE_CACHE_ENV, type CliRun } from './cli.js';

/*
 * `lexec run …` as a child that keeps running while a test reads its stderr and acts on the
 * stack (approves, stops it, interrupts the run).
 */

export interface BackgroundRun {
  /** The finished run; `onDone` saw it first. */
  readonly done: Promise<CliRun>;
  /** Ctrl-C. */
  interrupt(): void;
  /** Sends the run another signal: SIGKILL (a closed terminal), SIGSTOP / SIGCONT (hold it still while the test acts). */
  signal(name: NodeJS.Signals): void;
  /** Waits until stderr matches (generous: the machine may be busy); fails if the run ends first. */
  waitFor(pattern: RegExp, timeoutMs?: number): Promise<RegExpExecArray>;
}

export function startBackgroundRun(args: readonly string[], options: { readonly cwd: string; readonly env: Record<string, string>; readonly onDone?: (run: CliRun) => void }): BackgroundRun {
  const child = spawn(process.execPath, [BIN, 'run', ...args], { cwd: options.cwd, env: { ...COMPILE_CACHE_ENV, PATH: process.env.PATH ?? '', ...options.env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  const done = new Promise<CliRun>((resolve) => {
    child.once('close', (code, signal) => {
      const run = { exitCode: code ?? (signal === null ? -1 : 128), stdout, stderr };
      options.onDone?.(run);
      resolve(run);
    });
  });
  return {
    done,
    interrupt: () => child.kill('SIGINT'),
    signal: (name) => child.kill(name),
    async waitFor(pattern: RegExp, timeoutMs = 60_000): Promise<RegExpExecArray> {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const match = pattern.exec(stderr);
        if (match !== null) return match;
        if (child.exitCode !== null || Date.now() > deadline) throw new Error(`stderr never matched ${String(pattern)}:\n${stderr}${stdout}`);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    },
  };
}
