import { spawn, type ChildProcess } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BIN, makeTempDir, removeDir } from './cli.js';

/** A real `lexec ledger serve` child process on loopback, with its own SQLite file in a temp dir. */
export interface LedgerProcess {
  readonly url: string;
  readonly dir: string;
  /** Where the ledger wrote its admin capability on first start (0600 in a 0700 directory). */
  readonly adminCapabilityPath: string;
  /** Everything the process wrote on stderr so far (JSON log lines). */
  readonly stderr: () => string;
  /** SIGTERM, wait for exit (SIGKILL after a grace period), remove the temp dir. Idempotent. */
  stop(): Promise<void>;
}

export interface LedgerProcessOptions {
  readonly defaultPolicy?: { per_authorization_cap_units: string; daily_cap_units: string; approval_threshold_units: string };
  readonly startTimeoutMs?: number;
}

function exited(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => child.once('exit', () => {
    resolve();
  }));
}

/**
 * Starts the built binary as `lexec ledger serve --config <temp>/ledger.json` with port 0 and
 * waits for its `ledger_started` log line, which carries the port it bound. Always `stop()` it
 * (afterAll/afterEach): the helper never leaves a process behind on failure either.
 */
export async function startLedgerProcess(options: LedgerProcessOptions = {}): Promise<LedgerProcess> {
  const dir = await makeTempDir('lexec-ledger-process-');
  const adminCapabilityPath = join(dir, 'ledger-credentials', 'admin.capability');
  const configPath = join(dir, 'ledger.json');
  const config = {
    schema_version: 1,
    http: { host: '127.0.0.1', port: 0 },
    database_path: join(dir, 'state', 'ledger.db'),
    admin_capability_path: adminCapabilityPath,
    default_policy: {
      ...(options.defaultPolicy ?? { per_authorization_cap_units: '5000000', daily_cap_units: '20000000', approval_threshold_units: '1000000' }),
      units_scale: 6,
      currency: 'USD',
    },
  };
  await writeFile(configPath, JSON.stringify(config, null, 2));

  const child = spawn(process.execPath, [BIN, 'ledger', 'serve', '--config', configPath], {
    env: { PATH: process.env.PATH ?? '', HOME: tmpdir() },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  let stopped = false;
  const stop = async () => {
    if (stopped) return;
    stopped = true;
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
      const kill = setTimeout(() => child.kill('SIGKILL'), 5_000);
      await exited(child);
      clearTimeout(kill);
    }
    await removeDir(dir);
  };

  try {
    const port = await new Promise<number>((resolve, reject) => {
      const timer = setTimeout(() => {
        reject(new Error(`ledger did not start within ${options.startTimeoutMs ?? 15_000} ms; stderr:\n${stderr}`));
      }, options.startTimeoutMs ?? 15_000);
      child.stderr.setEncoding('utf8');
      child.stderr.on('data', (chunk: string) => {
        stderr += chunk;
        for (const line of stderr.split('\n')) {
          if (!line.includes('"ledger_started"')) continue;
          clearTimeout(timer);
          resolve((JSON.parse(line) as { port: number }).port);
        }
      });
      child.once('exit', (code, signal) => {
        clearTimeout(timer);
        reject(new Error(`ledger exited early (${String(code ?? signal)}); stderr:\n${stderr}`));
      });
    });
    return { url: `http://127.0.0.1:${port}`, dir, adminCapabilityPath, stderr: () => stderr, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}
