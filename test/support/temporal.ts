import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import { freePorts } from './free-ports.js';

/*
 * The real Temporal server for tests (no fake: issue 11). scripts/test.sh obtains the pinned CLI
 * with ../shared/tools/temporal-cli-bin and passes its path as LEXEC_TEMPORAL_CLI. Without it the
 * Temporal tests skip (scripts/test.sh says so in one line) — except in CI, where a missing CLI
 * fails the run.
 */

/** The Temporal CLI the tests run, or null when none was given. */
export function temporalCli(): string | null {
  const path = process.env.LEXEC_TEMPORAL_CLI;
  if (path === undefined || path === '') {
    if (process.env.CI === 'true') throw new Error('CI needs the Temporal CLI: LEXEC_TEMPORAL_CLI is not set (scripts/test.sh sets it with ../shared/tools/temporal-cli-bin)');
    return null;
  }
  if (!existsSync(path)) throw new Error(`LEXEC_TEMPORAL_CLI names a file that does not exist: ${path}`);
  return path;
}

/** The pinned version the tests configure (what the CLI reports, through --version or its Go build info). */
export const PINNED_TEMPORAL_VERSION = '1.5.1';

/** Resolves once something accepts connections on 127.0.0.1:`port`. */
export async function untilPortOpen(port: number, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const open = await new Promise<boolean>((resolve) => {
      const socket = connect({ host: '127.0.0.1', port });
      socket.once('connect', () => {
        socket.destroy();
        resolve(true);
      });
      socket.once('error', () => {
        resolve(false);
      });
    });
    if (open) return;
    if (Date.now() > deadline) throw new Error(`nothing listens on 127.0.0.1:${port} after ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

export interface DevServer {
  readonly port: number;
  /** `127.0.0.1:<port>` */
  readonly address: string;
  /** `grpc://127.0.0.1:<port>`: an external engine's `address`. */
  readonly url: string;
  readonly uiUrl: string;
  readonly output: () => string;
  /** Stops the server (SIGKILL after 5 s); its data survives when it has a db file. */
  stop(signal?: NodeJS.Signals): Promise<void>;
  /** Starts it again on the same port and db file. */
  restart(): Promise<void>;
}

/**
 * A Temporal dev server started by the test itself: the stand-in for an external cluster, which
 * the executor must never start or stop. With `dir` its history is kept in `<dir>/temporal.db`.
 */
export async function startDevServer(cli: string, options: { dir?: string; namespaces?: readonly string[] } = {}): Promise<DevServer> {
  const [port = 0, uiPort = 0] = await freePorts(2);
  let child: ChildProcess | undefined;
  let output = '';
  const launch = async () => {
    const args = ['server', 'start-dev', '--ip', '127.0.0.1', '--port', String(port), '--ui-port', String(uiPort), '--headless', '--log-format', 'json', '--log-level', 'warn'];
    args.push('--disable-config-env', '--disable-config-file');
    if (options.dir !== undefined) args.push('--db-filename', join(options.dir, 'temporal.db'));
    for (const namespace of options.namespaces ?? []) args.push('--namespace', namespace);
    const started = spawn(cli, args, { stdio: ['ignore', 'pipe', 'pipe'], env: { PATH: process.env.PATH ?? '', HOME: options.dir ?? process.env.HOME ?? '/tmp' } });
    started.stdout.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
    started.stderr.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
    child = started;
    await untilPortOpen(port);
  };
  const stop = async (signal: NodeJS.Signals = 'SIGTERM') => {
    const running = child;
    child = undefined;
    if (running === undefined || running.exitCode !== null || running.signalCode !== null) return;
    const exited = new Promise((resolve) => running.once('exit', resolve));
    running.kill(signal);
    const kill = setTimeout(() => running.kill('SIGKILL'), 5_000);
    await exited;
    clearTimeout(kill);
  };
  await launch();
  return {
    port,
    address: `127.0.0.1:${port}`,
    url: `grpc://127.0.0.1:${port}`,
    uiUrl: `http://127.0.0.1:${uiPort}`,
    output: () => output,
    stop,
    restart: launch,
  };
}
