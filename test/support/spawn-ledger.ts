import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { spawn } from 'node:child_process';
import { BIN } from './cli.js';

export interface LedgerProcess {
  readonly url: string;
  readonly configPath: string;
  readonly adminCapabilityPath: string;
  /** stderr so far, as lines. */
  readonly stderrLines: () => string[];
  /** Parsed JSON log lines so far. */
  readonly events: () => Record<string, unknown>[];
  /** Sends `signal` and waits for the exit code. */
  stop(signal?: NodeJS.Signals): Promise<number>;
}

export function ledgerConfig(dir: string, overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    schema_version: 1,
    http: { host: '127.0.0.1', port: 0 },
    database_path: join(dir, 'state', 'ledger.db'),
    admin_capability_path: join(dir, 'credentials', 'admin.capability'),
    default_policy: {
      per_authorization_cap_units: '5000000',
      daily_cap_units: '20000000',
      approval_threshold_units: '1000000',
      units_scale: 6,
      currency: 'USD',
    },
    ...overrides,
  };
}

/** Starts a real `lexec ledger serve` child process and waits until it listens. */
export async function spawnLedger(dir: string, config: Record<string, unknown> = ledgerConfig(dir), name = 'ledger.json'): Promise<LedgerProcess> {
  const configPath = join(dir, name);
  await writeFile(configPath, JSON.stringify(config, null, 2));
  const child = spawn(process.execPath, [BIN, 'ledger', 'serve', '--config', configPath], {
    env: { PATH: process.env.PATH ?? '', HOME: dir },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let exited = false;
  const exit = new Promise<number>((resolve) => {
    child.once('exit', (code, signal) => {
      exited = true;
      resolve(code ?? (signal === null ? -1 : 128));
    });
  });
  const lines: string[] = [];
  child.stderr.on('data', (chunk: Buffer) => lines.push(...chunk.toString('utf8').split('\n').filter(Boolean)));
  const events = () =>
    lines.flatMap((line) => {
      try {
        return [JSON.parse(line) as Record<string, unknown>];
      } catch {
        return [];
      }
    });
  const port = await new Promise<number>((resolve, reject) => {
    const timer = setInterval(() => {
      const started = events().find((event) => event.event === 'ledger_started');
      if (started) {
        clearInterval(timer);
        resolve(Number(started.port));
      } else if (exited) {
        clearInterval(timer);
        reject(new Error(`ledger exited before listening: ${lines.join('\n')}`));
      }
    }, 20);
  });
  return {
    url: `http://127.0.0.1:${port}`,
    configPath,
    adminCapabilityPath: String(config.admin_capability_path),
    stderrLines: () => [...lines],
    events,
    async stop(signal = 'SIGTERM') {
      if (!exited) child.kill(signal);
      return exit;
    },
  };
}
