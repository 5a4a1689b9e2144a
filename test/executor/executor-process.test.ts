import { spawn } from 'node:child_process';
import { mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { managedCredentialPaths } from '../../src/executor/managed-credentials.js';
import { BIN, makeTempDir, removeDir, runLexec } from '../support/cli.js';
import { sandboxConfig, type JsonObject } from '../support/config-fixtures.js';
import { call, mintCredential } from '../support/ledger.js';
import { ledgerConfig, spawnLedger, type LedgerProcess } from '../support/ledger-process.js';
import { executionRequest } from '../support/executor.js';
import { freePorts } from '../support/free-ports.js';
import { copyV43Fixture, fileDigest, headerJournal, injectIntoCopy } from '../support/executor-v43-fixture.js';

let dir: string;
let ledger: LedgerProcess | undefined;
let admin: string;
const stoppers: (() => Promise<unknown>)[] = [];

beforeEach(async () => {
  dir = await makeTempDir('lexec-executor-proc-');
});

afterEach(async () => {
  for (const stop of stoppers.splice(0).reverse()) await stop();
  if (ledger) await ledger.stop('SIGKILL');
  ledger = undefined;
  await removeDir(dir);
});

async function startLedger(port = 0): Promise<LedgerProcess> {
  ledger = await spawnLedger(dir, ledgerConfig(join(dir, 'ledger'), { http: { host: '127.0.0.1', port } }));
  admin = (await readFile(ledger.adminCapabilityPath, 'utf8')).trim();
  return ledger;
}

/** Runs the real `executor credentials bootstrap-managed`; returns the caller capability it created. */
async function bootstrap(configPath: string): Promise<string> {
  const run = await runLexec(
    ['executor', 'credentials', 'bootstrap-managed', '--config', configPath, '--ledger-admin-capability', ledger?.adminCapabilityPath ?? '', '--json'],
    { home: dir },
  );
  expect(run.exitCode, run.stdout + run.stderr).toBe(0);
  return (await readFile(managedCredentialPaths(join(dir, 'executor', 'credentials')).caller, 'utf8')).trim();
}

async function executorConfigFile(ledgerUrl: string, change?: (config: JsonObject) => void): Promise<string> {
  const config = sandboxConfig();
  config.http = { host: '127.0.0.1', port: 0 };
  (config.ledger as JsonObject).endpoint = ledgerUrl;
  config.credentials = { mode: 'managed', state_dir: join(dir, 'executor', 'credentials') };
  config.storage = {
    database_path: join(dir, 'executor', 'executor.db'),
    artifact_root: join(dir, 'executor', 'artifacts'),
    catalog_path: join(dir, 'executor', 'provider-catalog.json'),
  };
  config.development_allowance = true;
  change?.(config);
  const path = join(dir, 'executor.json');
  await writeFile(path, JSON.stringify(config, null, 2));
  return path;
}

interface ExecutorProcess {
  url: () => string;
  lines: string[];
  exit: Promise<number>;
  stop: (signal?: NodeJS.Signals) => Promise<number>;
}

function spawnExecutor(configPath: string): ExecutorProcess {
  const child = spawn(process.execPath, [BIN, 'executor', 'serve', '--config', configPath, '--json'], {
    env: { PATH: process.env.PATH ?? '', HOME: dir },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const lines: string[] = [];
  child.stderr.setEncoding('utf8');
  child.stderr.on('data', (chunk: string) => lines.push(...chunk.split('\n').filter(Boolean)));
  child.stdout.setEncoding('utf8');
  child.stdout.on('data', (chunk: string) => lines.push(...chunk.split('\n').filter(Boolean)));
  const exit = new Promise<number>((resolve) => child.once('exit', (code) => { resolve(code ?? -1); }));
  const stop = async (signal: NodeJS.Signals = 'SIGTERM') => {
    if (child.exitCode === null) child.kill(signal);
    return exit;
  };
  stoppers.push(() => stop('SIGKILL'));
  const url = () => {
    const started = lines.map((line) => JSON.parse(line) as Record<string, unknown>).find((event) => event.event === 'executor_started');
    return started === undefined ? '' : `http://127.0.0.1:${String(started.port)}`;
  };
  return { url, lines, exit, stop };
}

/** Polls `probe`; the deadline is a ceiling for a loaded 2-core machine (an executor start can take tens of seconds there). */
async function until<T>(what: string, probe: () => Promise<T | undefined> | T | undefined, timeoutMs = 60_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

const readyz = async (url: string) => (url === '' ? 0 : (await fetch(`${url}/readyz`).catch(() => ({ status: 0 }))).status);

/**
 * A ledger and a bootstrapped executor, both real processes, the executor ready; plus a way to
 * get approved tokens. The ledger binds port 0 unless the test will start it again on its port.
 */
async function readyStack(ledgerPort = 0) {
  const ledgerProcess = await startLedger(ledgerPort);
  const configPath = await executorConfigFile(ledgerProcess.url);
  const caller = await bootstrap(configPath);
  const executor = spawnExecutor(configPath);
  await until('ready', async () => ((await readyz(executor.url())) === 200 ? true : undefined));
  const created = await call<{ agent: { agent_id: string } }>(ledgerProcess.url, 'POST', '/agents', { token: admin, body: { name: 'bot' } });
  const agent = await mintCredential({ url: ledgerProcess.url, adminToken: admin }, 'agent', created.body.agent.agent_id);
  const approvedToken = async () =>
    (
      await call<{ authorization: { token_id: string } }>(ledgerProcess.url, 'POST', '/authorizations', {
        token: agent,
        body: { amount_units: '900000', units_scale: 6, currency: 'USD' },
      })
    ).body.authorization.token_id;
  return { ledgerProcess, caller, executor, approvedToken };
}

describe('executor serve', () => {
  it('becomes ready against a compatible ledger, admits for real, and stops gracefully on SIGTERM', async () => {
    const { caller, executor, approvedToken } = await readyStack();
    const admitted = await call<{ execution: { state: string } }>(executor.url(), 'POST', '/v2/executions', {
      token: caller,
      body: executionRequest(await approvedToken()),
    });
    expect(admitted).toMatchObject({ status: 201, body: { execution: { state: 'scheduled' } } });

    const catalog = JSON.parse(await readFile(join(dir, 'executor', 'provider-catalog.json'), 'utf8')) as { catalog_schema_version: number };
    expect(catalog.catalog_schema_version).toBe(1);
    expect(await executor.stop()).toBe(0);
    const events = executor.lines.flatMap((line) => {
      try {
        return [(JSON.parse(line) as { event?: string }).event];
      } catch {
        return [];
      }
    });
    expect(events).toEqual(expect.arrayContaining(['executor_started', 'executor_ready', 'executor_stopping', 'executor_stopped']));
    const text = executor.lines.join('\n');
    expect(text).not.toContain(caller);
    expect(text).not.toMatch(/lexec_(caller|executor|admin)_[A-Za-z0-9_-]{20}/);
  });

  it('stays up but not ready while the ledger is down, and becomes ready when it returns', async () => {
    // A port of this worker's own (free-ports.ts): one the kernel gave out could be given to
    // another process while the ledger is down.
    const [port = 0] = await freePorts(1);
    const first = await startLedger(port);
    const configPath = await executorConfigFile(first.url);
    await bootstrap(configPath);
    await first.stop();
    const executor = spawnExecutor(configPath);
    await until('listening', () => (executor.url() === '' ? undefined : true));
    expect((await fetch(`${executor.url()}/livez`)).status).toBe(200);
    expect(await readyz(executor.url())).toBe(503);
    await startLedger(port);
    await until('ready', async () => ((await readyz(executor.url())) === 200 ? true : undefined));
  });

  it('withdraws readiness when the running ledger stops and restores it when it returns; reads stay up', async () => {
    const [port = 0] = await freePorts(1);
    const { ledgerProcess, executor, caller } = await readyStack(port);
    await ledgerProcess.stop();
    await until('withdrawn', async () => ((await readyz(executor.url())) === 503 ? true : undefined));
    expect((await fetch(`${executor.url()}/livez`)).status).toBe(200);
    expect((await call(executor.url(), 'GET', '/v1/provider-catalog', { token: caller })).status).toBe(200);
    await startLedger(port);
    await until('restored', async () => ((await readyz(executor.url())) === 200 ? true : undefined));
    const probes = executor.lines.flatMap((line) => {
      try {
        const event = JSON.parse(line) as Record<string, unknown>;
        return event.event === 'executor_dependency_probe' && event.dependency === 'ledger' ? [event] : [];
      } catch {
        return [];
      }
    });
    expect(probes.some((event) => event.outcome !== 'ok')).toBe(true);
  }, 120_000);

  it.each([
    ['a ledger version other than the pinned one', (config: JsonObject) => ((config.ledger as JsonObject).product_version = 'v9.9.9'), 'ledger_version_mismatch'],
    ['a development build without the development allowance', (config: JsonObject) => (config.development_allowance = false), 'development_build_refused'],
  ])('refuses to run with %s', async (_name, change, code) => {
    const ledgerProcess = await startLedger();
    const configPath = await executorConfigFile(ledgerProcess.url, change);
    await bootstrap(configPath);
    const executor = spawnExecutor(configPath);
    expect(await executor.exit).toBe(1);
    const failure = executor.lines.map((line) => JSON.parse(line) as Record<string, unknown>).find((line) => line.ok === false);
    expect(failure).toMatchObject({ ok: false, error: { code } });
  });

  it('refuses to start without its managed credentials', async () => {
    const ledgerProcess = await startLedger();
    const run = await runLexec(['executor', 'serve', '--config', await executorConfigFile(ledgerProcess.url), '--json'], { home: dir });
    expect(run.exitCode).toBe(1);
    expect(JSON.parse(run.stdout)).toMatchObject({ error: { code: 'managed_credentials_missing' } });
  });

  it('refuses to start when its database cannot run in WAL: exit 1, database_wal_unavailable naming the path and the next step', async () => {
    const ledgerProcess = await startLedger();
    const configPath = await executorConfigFile(ledgerProcess.url);
    await bootstrap(configPath);
    const databasePath = join(dir, 'executor', 'executor.db');
    // The shared-memory index cannot be opened for writing (a directory stands where it goes).
    await mkdir(`${databasePath}-shm`, { recursive: true });
    const run = await runLexec(['executor', 'serve', '--config', configPath], { home: dir });
    expect(run.exitCode).toBe(1);
    expect(run.stderr).toContain(`Error: The database ${databasePath} cannot run in WAL journal mode (SQLite: SQLITE_READONLY)`);
    expect(run.stderr).toContain(`${databasePath}-shm`);
    expect(run.stderr).not.toContain('executor_started');
  });

  it('refuses a v4.3 database holding a fractional amount: exit 1, one-line migration_refused on stderr, the file byte for byte as it was', async () => {
    const ledgerProcess = await startLedger();
    const configPath = await executorConfigFile(ledgerProcess.url);
    await bootstrap(configPath);
    const databasePath = join(dir, 'executor', 'executor.db');
    await copyV43Fixture(databasePath);
    injectIntoCopy(databasePath, "UPDATE receipts SET amount_cents = 12.5 WHERE receipt_id = 'rcpt_v43_two_images'");
    const before = await fileDigest(databasePath);

    const run = await runLexec(['executor', 'serve', '--config', configPath], { home: dir });
    expect(run.exitCode).toBe(1);
    expect(run.stdout).toBe('');
    const lines = run.stderr.split('\n').filter(Boolean);
    // The copy is 0644, as an older release left its database: made private first (its mode, never its bytes), and said.
    expect(JSON.parse(lines[0] ?? '')).toMatchObject({ event: 'state_file_tightened', path: databasePath, previous_mode: '0644', mode: '0600' });
    expect(lines[1]).toBe(
      'Error: The executor database cannot be migrated (micro-unit migration): receipts.amount_cents of receipt_id rcpt_v43_two_images is stored as real, not as a whole number of cents. Its content was not changed.',
    );
    expect(lines).toHaveLength(3); // the tightening, the message, then its next step
    expect(run.stderr).not.toContain('12.5');

    expect(await fileDigest(databasePath)).toBe(before);
    expect(headerJournal(databasePath)).toBe('rollback');
    // No -wal, -shm or -journal, and the executor's lock is gone with it.
    expect((await readdir(join(dir, 'executor'))).filter((name) => name.startsWith('executor.db'))).toEqual(['executor.db']);
  });

  it('refuses a v4.3 database whose amount would overflow the micro-unit range, answering migration_refused under --json', async () => {
    const ledgerProcess = await startLedger();
    const configPath = await executorConfigFile(ledgerProcess.url);
    await bootstrap(configPath);
    const databasePath = join(dir, 'executor', 'executor.db');
    await copyV43Fixture(databasePath);
    injectIntoCopy(databasePath, "UPDATE executions SET authorization_held_cents = 922337203685478 WHERE execution_id = 'exe_v43_pending'");
    const before = await fileDigest(databasePath);

    const run = await runLexec(['executor', 'serve', '--config', configPath, '--json'], { home: dir });
    expect(run.exitCode).toBe(1);
    expect(JSON.parse(run.stdout)).toMatchObject({
      ok: false,
      error: { code: 'migration_refused', message: expect.stringContaining('executions.authorization_held_cents of execution_id exe_v43_pending is beyond the micro-unit range') as unknown },
    });
    expect(await fileDigest(databasePath)).toBe(before);
  });
});

describe('admission rules between real ledger and executor processes', () => {
  it('replays locally, conflicts on a changed field, shares one admission under concurrency, logs rejections once, refuses bad input', async () => {
    const { ledgerProcess, caller, executor, approvedToken: token } = await readyStack();
    const submit = (body: unknown, rawBody?: string, contentType?: string) =>
      call<{ execution: { execution_id: string }; error?: Record<string, unknown> }>(executor.url(), 'POST', '/v2/executions', {
        token: caller,
        body,
        rawBody,
        contentType,
      });
    // Admission resolves and claims in one conditional claim; nothing else on the ledger claims.
    const resolves = () => ledgerProcess.events().filter((event) => event.route === '/executor/authorizations/:token_id/claim').length;
    const settle = () => new Promise((resolve) => setTimeout(resolve, 200));

    // Concurrency: one execution, one ledger resolution.
    const shared = await token();
    const results = await Promise.all(Array.from({ length: 12 }, () => submit(executionRequest(shared))));
    expect(results.filter((result) => result.status === 201)).toHaveLength(1);
    expect(results.filter((result) => result.status === 200)).toHaveLength(11);
    await settle();
    expect(resolves()).toBe(1);

    // Replay: no ledger call. Conflict: the changed path.
    expect((await submit(executionRequest(shared))).status).toBe(200);
    const changed = await submit(executionRequest(shared, { input: { prompt: 'different', image_count: 2, image_size: 'square_hd' } }));
    expect(changed).toMatchObject({ status: 409, body: { error: { reason_code: 'immutable_field_changed', fields: ['input.prompt'] } } });
    await settle();
    expect(resolves()).toBe(1);

    // Refusals, and executor_admission_rejected once per reason.
    const fresh = await token();
    for (let index = 0; index < 3; index += 1) {
      expect((await submit(executionRequest(fresh, { target_id: 'lexec:target:v1:gone' }))).body.error).toMatchObject({ reason_code: 'target_not_selectable' });
    }
    expect((await submit(undefined, JSON.stringify({ pad: 'x'.repeat(70_000) }))).status).toBe(413);
    expect((await submit(undefined, 'a=b', 'application/x-www-form-urlencoded')).status).toBe(415);
    expect((await submit(undefined, '{"schema_version":')).status).toBe(400);
    expect((await call(executor.url(), 'POST', '/v2/executions', { token: admin, body: executionRequest(fresh) })).status).toBe(401);
    await settle();
    const rejected = executor.lines.flatMap((line) => {
      try {
        const event = JSON.parse(line) as Record<string, unknown>;
        return event.event === 'executor_admission_rejected' ? [event] : [];
      } catch {
        return [];
      }
    });
    expect(rejected.map((event) => [event.reason_code, event.fields])).toEqual([
      ['immutable_field_changed', ['input.prompt']],
      ['target_not_selectable', ['target_id']],
    ]);
    expect(executor.lines.join('\n')).not.toContain(fresh);
  });
});
