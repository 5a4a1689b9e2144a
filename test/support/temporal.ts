import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { afterAll, beforeAll } from 'vitest';
import { probeGrpcHealth } from '../../src/executor/engine/temporal/grpc-health-probe.js';
import { TESTED_TEMPORAL_CLI_VERSION } from '../../src/executor/engine/temporal/temporal-cli-observation.js';
import { freePorts, isBindConflict } from './free-ports.js';

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

/** The pinned version the tests configure (what the CLI reports, through --version or its Go build info): the one lexec is tested with. */
export const PINNED_TEMPORAL_VERSION = TESTED_TEMPORAL_CLI_VERSION;

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

export interface DevServerOptions {
  /** Keep its history in `<dir>/temporal.db` (it survives `stop`/`restart`); HOME is `dir` too. */
  readonly dir?: string;
  /** More namespaces created at start ("default" always is). */
  readonly namespaces?: readonly string[];
  /** The frontend port of the first attempt (default: one reserved for this worker, free-ports.ts). */
  readonly port?: number;
  /** Bound of one attempt until the frontend listens (default 90 s: a loaded 2-core machine). */
  readonly startTimeoutMs?: number;
}

/** Attempts on fresh ports after a bind conflict before the start gives up. */
const START_ATTEMPTS = 5;

/** What one attempt came to: listening, or the child exited (with its output). */
type LaunchOutcome = { readonly listening: true } | { readonly listening: false; readonly output: string };

/**
 * A Temporal dev server started by the test itself: the stand-in for an external cluster, which
 * the executor must never start or stop. With `dir` its history is kept in `<dir>/temporal.db`.
 *
 * `start-dev` cannot bind port 0 and report, so its ports (frontend, UI, HTTP API, metrics) are
 * reserved for this test worker outside the ephemeral range (free-ports.ts); should one be taken
 * all the same, the child exits saying so and the start is tried again on fresh ports.
 */
export async function startDevServer(cli: string, options: DevServerOptions = {}): Promise<DevServer> {
  const startTimeoutMs = options.startTimeoutMs ?? 90_000;
  let child: ChildProcess | undefined;
  let output = '';
  let ports = { port: 0, uiPort: 0, httpPort: 0, metricsPort: 0 };
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
  const launch = async (): Promise<LaunchOutcome> => {
    const { port, uiPort, httpPort, metricsPort } = ports;
    const args = ['server', 'start-dev', '--ip', '127.0.0.1', '--port', String(port), '--ui-port', String(uiPort), '--headless', '--log-format', 'json', '--log-level', 'warn'];
    args.push('--http-port', String(httpPort), '--metrics-port', String(metricsPort), '--disable-config-env', '--disable-config-file');
    if (options.dir !== undefined) args.push('--db-filename', join(options.dir, 'temporal.db'));
    for (const namespace of options.namespaces ?? []) args.push('--namespace', namespace);
    let attemptOutput = '';
    const started = spawn(cli, args, { stdio: ['ignore', 'pipe', 'pipe'], env: { PATH: process.env.PATH ?? '', HOME: options.dir ?? process.env.HOME ?? '/tmp' } });
    const collect = (chunk: Buffer) => {
      const text = chunk.toString('utf8');
      output += text;
      attemptOutput += text;
    };
    started.stdout.on('data', collect);
    started.stderr.on('data', collect);
    child = started;
    // Serving while our child lives: after it exited, whatever answers on the port is not it.
    const alive = () => started.exitCode === null && started.signalCode === null;
    const deadline = Date.now() + startTimeoutMs;
    while (alive() && Date.now() < deadline) {
      if ((await probeGrpcHealth(port, 1_000)).serving && alive()) return { listening: true };
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    if (alive()) {
      await stop('SIGKILL');
      return { listening: false, output: `${attemptOutput}\n(not serving after ${startTimeoutMs} ms; killed)` };
    }
    // Its last words arrive with the exit.
    await new Promise((resolve) => setTimeout(resolve, 100));
    return { listening: false, output: attemptOutput };
  };
  for (let attempt = 1; ; attempt += 1) {
    const [port = 0, uiPort = 0, httpPort = 0, metricsPort = 0] = await freePorts(4);
    ports = { port: attempt === 1 ? (options.port ?? port) : port, uiPort, httpPort, metricsPort };
    const outcome = await launch();
    if (outcome.listening) break;
    if (!isBindConflict(outcome.output) || attempt === START_ATTEMPTS) {
      throw new Error(`temporal server start-dev exited before it listened on 127.0.0.1:${ports.port} (attempt ${attempt}):\n${outcome.output}`);
    }
  }
  const { port, uiPort } = ports;
  return {
    port,
    address: `127.0.0.1:${port}`,
    url: `grpc://127.0.0.1:${port}`,
    uiUrl: `http://127.0.0.1:${uiPort}`,
    output: () => output,
    stop,
    async restart() {
      // The same ports (clients hold the address); they are this worker's, so nobody took them.
      const outcome = await launch();
      if (!outcome.listening) throw new Error(`temporal server start-dev did not start again on 127.0.0.1:${port}:\n${outcome.output}`);
    },
  };
}

/** A test file's dev server and a client connected to it (read inside tests, once started). */
export interface ConnectedDevServer {
  readonly server: DevServer;
  readonly client: Client;
}

/**
 * One dev server and a client connected to it for the whole test file: started in `beforeAll`
 * (within `timeoutMs`), the connection closed and the server stopped in `afterAll`. Nothing is
 * started when `cli` is null (the file's Temporal tests skip).
 */
export function connectedDevServer(cli: string | null, timeoutMs = 120_000): ConnectedDevServer {
  const started: { server?: DevServer; connection?: Connection; client?: Client } = {};
  beforeAll(async () => {
    if (cli === null) return;
    started.server = await startDevServer(cli);
    started.connection = await Connection.connect({ address: started.server.address });
    started.client = new Client({ connection: started.connection });
  }, timeoutMs);
  afterAll(async () => {
    await started.connection?.close();
    await started.server?.stop();
  });
  const ready = <T>(value: T | undefined): T => {
    if (value === undefined) throw new Error('the dev server is not started (connectedDevServer starts it in beforeAll)');
    return value;
  };
  return {
    get server() {
      return ready(started.server);
    },
    get client() {
      return ready(started.client);
    },
  };
}
