import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { readPrivateFile } from '../../src/credentials/private-file.js';
import { makeTempDir, removeDir } from './cli.js';
import { SERVER_START_TIMEOUT_MS, spawnServerProcess } from './server-process.js';

/** A real `lexec ledger serve` child process on loopback. */
export interface LedgerProcess {
  readonly url: string;
  readonly configPath: string;
  /** Where the ledger keeps its admin capability (0600 in a 0700 directory). */
  readonly adminCapabilityPath: string;
  /** stderr so far, as lines. */
  readonly stderrLines: () => string[];
  /** Parsed JSON log lines so far. */
  readonly events: () => Record<string, unknown>[];
  /** Sends `signal` (SIGKILL after 5 s) and waits for the exit code. Idempotent. */
  stop(signal?: NodeJS.Signals): Promise<number>;
}

export interface DefaultPolicy {
  readonly per_authorization_cap_units: string;
  readonly daily_cap_units: string;
  readonly approval_threshold_units: string;
}

const DEFAULT_POLICY: DefaultPolicy = { per_authorization_cap_units: '5000000', daily_cap_units: '20000000', approval_threshold_units: '1000000' };

/** A ledger configuration with all state under `dir`, listening on a free loopback port. */
export function ledgerConfig(dir: string, overrides: Record<string, unknown> = {}, policy: DefaultPolicy = DEFAULT_POLICY): Record<string, unknown> {
  return {
    schema_version: 1,
    http: { host: '127.0.0.1', port: 0 },
    database_path: join(dir, 'state', 'ledger.db'),
    admin_capability_path: join(dir, 'credentials', 'admin.capability'),
    default_policy: { ...policy, units_scale: 6, currency: 'USD' },
    ...overrides,
  };
}

/** How the ledger process is run: another build (`bin`), more environment (`env`). */
export interface LedgerProcessOptions {
  readonly bin?: string;
  readonly env?: Readonly<Record<string, string>>;
}

/**
 * Writes `config` to `dir/name`, starts `lexec ledger serve --config` and waits for its
 * `ledger_started` line, which carries the port it bound. Stop it in afterAll/afterEach.
 */
export async function spawnLedger(
  dir: string,
  config: Record<string, unknown> = ledgerConfig(dir),
  name = 'ledger.json',
  startTimeoutMs = SERVER_START_TIMEOUT_MS,
  options: LedgerProcessOptions = {},
): Promise<LedgerProcess> {
  const configPath = join(dir, name);
  await writeFile(configPath, JSON.stringify(config, null, 2));
  const server = await spawnServerProcess(['ledger', 'serve', '--config', configPath], {
    startedEvent: 'ledger_started',
    env: { ...options.env, PATH: process.env.PATH ?? '', HOME: dir },
    startTimeoutMs,
    ...(options.bin === undefined ? {} : { bin: options.bin }),
  });
  return {
    url: `http://127.0.0.1:${String(server.started.port)}`,
    configPath,
    adminCapabilityPath: String(config.admin_capability_path),
    stderrLines: server.stderrLines,
    events: server.events,
    stop: server.stop,
  };
}

/** A ledger process in its own temporary directory; `stop()` also removes the directory. */
export interface TemporaryLedgerProcess extends Omit<LedgerProcess, 'stop'> {
  readonly dir: string;
  /** Everything written on stderr so far. */
  readonly stderr: () => string;
  stop(): Promise<void>;
}

export async function startLedgerProcess(options: { defaultPolicy?: DefaultPolicy; startTimeoutMs?: number } = {}): Promise<TemporaryLedgerProcess> {
  const dir = await makeTempDir('lexec-ledger-process-');
  try {
    const ledger = await spawnLedger(dir, ledgerConfig(dir, {}, options.defaultPolicy), 'ledger.json', options.startTimeoutMs);
    return {
      ...ledger,
      dir,
      stderr: () => ledger.stderrLines().join('\n'),
      async stop() {
        await ledger.stop();
        await removeDir(dir);
      },
    };
  } catch (error) {
    await removeDir(dir);
    throw error;
  }
}

/** Two ledger processes on one database, for races that must hold across processes, not only within one. */
export interface LedgerPair {
  readonly ledger: TemporaryLedgerProcess;
  /** The second process, on the first one's database. */
  readonly other: LedgerProcess;
  readonly adminToken: string;
  /** A read-only look at the shared database. */
  readonly reader: Database.Database;
  stop(): Promise<void>;
}

export async function startLedgerPair(): Promise<LedgerPair> {
  const ledger = await startLedgerProcess();
  const databasePath = join(ledger.dir, 'state', 'ledger.db');
  const other = await spawnLedger(ledger.dir, ledgerConfig(ledger.dir, { database_path: databasePath }), 'other.json').catch(async (error: unknown) => {
    await ledger.stop();
    throw error;
  });
  const reader = new Database(databasePath, { readonly: true });
  return {
    ledger,
    other,
    adminToken: await readPrivateFile(ledger.adminCapabilityPath, 'admin capability'),
    reader,
    async stop() {
      reader.close();
      await other.stop();
      await ledger.stop();
    },
  };
}
