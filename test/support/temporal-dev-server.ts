import { spawn } from 'node:child_process';
import { connect } from 'node:net';
import { freePorts } from './free-ports.js';

/** A real Temporal dev server (in memory) in a child process. */
export interface TemporalDevServer {
  /** `127.0.0.1:<port>` of its frontend gRPC service. */
  readonly address: string;
  /** Sends SIGTERM (SIGKILL after 5 s) and waits for the exit. Idempotent. */
  stop(): Promise<void>;
}

/**
 * Starts `temporal server start-dev` from the CLI at LEXEC_TEMPORAL_CLI (or `temporal` on PATH)
 * on free loopback ports, and waits until its frontend port accepts connections.
 */
export async function startTemporalDevServer(timeoutMs = 20_000): Promise<TemporalDevServer> {
  const cli = process.env.LEXEC_TEMPORAL_CLI ?? 'temporal';
  const [port = 0, uiPort = 0] = await freePorts(2);
  const args = ['server', 'start-dev', '--ip', '127.0.0.1', '--port', String(port), '--ui-port', String(uiPort), '--headless'];
  args.push('--log-format', 'json', '--log-level', 'warn', '--disable-config-env', '--disable-config-file');
  const child = spawn(cli, args, { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr.setEncoding('utf8');
  child.stderr.on('data', (chunk: string) => {
    stderr = (stderr + chunk).slice(-4_000);
  });
  const exited = new Promise<void>((resolve) => {
    child.once('close', () => { resolve(); });
  });
  let spawnError: Error | undefined;
  child.once('error', (error) => {
    spawnError = error;
  });
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null && spawnError === undefined) {
      child.kill('SIGTERM');
      const kill = setTimeout(() => child.kill('SIGKILL'), 5_000);
      await exited;
      clearTimeout(kill);
    }
  };
  const deadline = Date.now() + timeoutMs;
  while (!(await accepts(port))) {
    if (spawnError !== undefined || child.exitCode !== null || Date.now() > deadline) {
      await stop();
      const why = spawnError === undefined ? `stderr:\n${stderr}` : `${spawnError.message} (set LEXEC_TEMPORAL_CLI to the Temporal CLI)`;
      throw new Error(`the Temporal dev server did not start: ${why}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return { address: `127.0.0.1:${port}`, stop };
}

function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ port, host: '127.0.0.1' });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => { resolve(false); });
  });
}
