import { spawn } from 'node:child_process';
import { BIN, COMPILE_CACHE_ENV } from './cli.js';
import { collectJsonLines } from './json-lines.js';

/** A lexec server running as a real child process (`lexec … serve`). */
export interface ServerProcess {
  /** The server's `*_started` log event (it carries the port it bound). */
  readonly started: Record<string, unknown>;
  /** stderr so far, as lines (the server's JSON log). */
  readonly stderrLines: () => string[];
  /** stdout so far, as lines (the command's human result, once it stops). */
  readonly stdoutLines: () => string[];
  /** Parsed JSON log lines so far. */
  readonly events: () => Record<string, unknown>[];
  /** Sends `signal` (SIGKILL after 5 s) and waits for the exit code. Idempotent. */
  readonly stop: (signal?: NodeJS.Signals) => Promise<number>;
  /** Sends `signal` and returns at once (SIGHUP: a server reads its certificate again). */
  readonly signal: (signal: NodeJS.Signals) => void;
}

/** Bound of a server start: under a second idle, a ceiling for a loaded 2-core machine. */
export const SERVER_START_TIMEOUT_MS = 60_000;

/**
 * Starts `lexec <args>` and waits for the JSON log event named `startedEvent`. A process that
 * exits or does not start in time is killed and reported with its stderr.
 */
export async function spawnServerProcess(
  args: readonly string[],
  options: {
    startedEvent: string;
    env: Record<string, string>;
    startTimeoutMs?: number;
    /** Another lexec build's bin/run.js (default: this checkout's). */
    bin?: string;
    /** Runs the server under `ulimit -n` (soft and hard): at most this many open file descriptors. */
    openFileLimit?: number;
  },
): Promise<ServerProcess> {
  const command = [process.execPath, options.bin ?? BIN, ...args];
  const env = { ...COMPILE_CACHE_ENV, ...options.env };
  const child =
    options.openFileLimit === undefined
      ? spawn(process.execPath, command.slice(1), { env, stdio: ['ignore', 'pipe', 'pipe'] })
      : spawn('/bin/sh', ['-c', `ulimit -n ${String(options.openFileLimit)} && exec "$0" "$@"`, ...command], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let exited = false;
  const exit = new Promise<number>((resolve) => {
    child.once('exit', (code, signal) => {
      exited = true;
      resolve(code ?? (signal === null ? -1 : 128));
    });
  });
  const { lines, events } = collectJsonLines(child.stderr);
  const { lines: stdout } = collectJsonLines(child.stdout);
  const stop = async (signal: NodeJS.Signals = 'SIGTERM') => {
    if (!exited) {
      child.kill(signal);
      const kill = setTimeout(() => child.kill('SIGKILL'), 5_000);
      await exit;
      clearTimeout(kill);
    }
    return exit;
  };
  const timeoutMs = options.startTimeoutMs ?? SERVER_START_TIMEOUT_MS;
  try {
    const started = await new Promise<Record<string, unknown>>((resolve, reject) => {
      const deadline = Date.now() + timeoutMs;
      const timer = setInterval(() => {
        const event = events().find((candidate) => candidate.event === options.startedEvent);
        if (event) {
          clearInterval(timer);
          resolve(event);
        } else if (exited || Date.now() > deadline) {
          clearInterval(timer);
          reject(new Error(`lexec ${args.slice(0, 2).join(' ')} did not start (${exited ? 'exited' : 'timed out'}); stderr:\n${lines.join('\n')}`));
        }
      }, 20);
    });
    const signal = (name: NodeJS.Signals) => {
      if (!exited) child.kill(name);
    };
    return { started, stderrLines: () => [...lines], stdoutLines: () => [...stdout], events, stop, signal };
  } catch (error) {
    await stop('SIGKILL');
    throw error;
  }
}
