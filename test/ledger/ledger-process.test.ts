import { chmod, mkdir, readFile, stat, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { generateCapability } from '../../src/credentials/capability.js';
import { makeTempDir, removeDir, runLexec } from '../support/cli.js';
import { call, mintCredential } from '../support/ledger.js';
import { ledgerConfig, spawnLedger, type LedgerProcess } from '../support/ledger-process.js';

let dir: string;
let running: LedgerProcess[] = [];

beforeEach(async () => {
  dir = await makeTempDir('lexec-ledger-proc-');
});

afterEach(async () => {
  await Promise.all(running.map((ledger) => ledger.stop('SIGKILL')));
  running = [];
  await removeDir(dir);
});

async function start(config = ledgerConfig(dir), name?: string): Promise<LedgerProcess> {
  const ledger = await spawnLedger(dir, config, name);
  running.push(ledger);
  return ledger;
}

async function stop(ledger: LedgerProcess, signal: NodeJS.Signals = 'SIGTERM'): Promise<number> {
  running = running.filter((other) => other !== ledger);
  return ledger.stop(signal);
}

describe('ledger serve', () => {
  it('creates its admin capability privately on first start, reuses it after a graceful restart', async () => {
    const first = await start();
    const capabilityPath = first.adminCapabilityPath;
    const file = await stat(capabilityPath);
    expect(file.mode & 0o777).toBe(0o600);
    expect((await stat(dirname(capabilityPath))).mode & 0o777).toBe(0o700);
    const admin = (await readFile(capabilityPath, 'utf8')).trim();
    expect(admin).toMatch(/^lexec_admin_[A-Za-z0-9_-]{43}$/);
    expect(first.events().find((event) => event.event === 'ledger_started')).toMatchObject({ admin_capability: 'created', contract_level: 'v4.5' });
    expect((await call(first.url, 'POST', '/agents', { token: admin, body: { name: 'bot' } })).status).toBe(201);

    for (const signal of ['SIGTERM', 'SIGINT'] as const) {
      const ledger = running.at(-1);
      if (!ledger) throw new Error('no ledger');
      expect(await stop(ledger, signal)).toBe(0);
      expect(ledger.events().map((event) => event.event)).toEqual(expect.arrayContaining(['ledger_stopping', 'ledger_stopped']));
      const again = await start();
      expect(again.events().find((event) => event.event === 'ledger_started')).toMatchObject({ admin_capability: 'reused' });
      const agents = await call<{ agents: { name: string }[] }>(again.url, 'GET', '/agents', { token: admin });
      expect(agents.body.agents.map((agent) => agent.name)).toEqual(['bot']);
    }
  });

  it('reports the exact build facts on /version and with --version', async () => {
    const ledger = await start();
    const version = await call(ledger.url, 'GET', '/version');
    const cli = JSON.parse((await runLexec(['version', '--json'])).stdout) as { result: Record<string, string> };
    expect(version.body).toEqual({ ...cli.result, contract_level: 'v4.5' });
    const flag = await runLexec(['ledger', 'serve', '--version', '--json']);
    expect(flag.exitCode).toBe(0);
    expect((JSON.parse(flag.stdout) as { result: unknown }).result).toEqual(cli.result);
    const human = await runLexec(['ledger', 'serve', '--version']);
    expect(human.stdout).toContain(`lexec ledger ${cli.result.product_version ?? ''} (contract v4.5, commit ${cli.result.commit ?? ''}`);
  });

  it('fails closed when the admin capability file does not match the database', async () => {
    const ledger = await start();
    await stop(ledger);
    await writeFile(ledger.adminCapabilityPath, `${generateCapability('admin')}\n`, { mode: 0o600 });
    const run = await runLexec(['ledger', 'serve', '--config', ledger.configPath, '--json'], { home: dir });
    expect(run.exitCode).toBe(1);
    expect(JSON.parse(run.stdout)).toMatchObject({ ok: false, error: { code: 'admin_capability_mismatch' } });
  });

  it('refuses an admin capability file others can read', async () => {
    const ledger = await start();
    await stop(ledger);
    await chmod(ledger.adminCapabilityPath, 0o644);
    const run = await runLexec(['ledger', 'serve', '--config', ledger.configPath, '--json'], { home: dir });
    expect(run.exitCode).toBe(1);
    expect(JSON.parse(run.stdout)).toMatchObject({ error: { code: 'secret_file_not_private' } });
    expect(run.stdout + run.stderr).not.toMatch(/lexec_admin_/);
  });

  it('refuses to start when its database cannot run in WAL: exit 1, database_wal_unavailable naming the path, no port taken', async () => {
    const config = ledgerConfig(dir);
    const databasePath = String(config.database_path);
    // The shared-memory index cannot be opened for writing (a directory stands where it goes).
    await mkdir(`${databasePath}-shm`, { recursive: true });
    const path = join(dir, 'ledger.json');
    await writeFile(path, JSON.stringify(config));
    const run = await runLexec(['ledger', 'serve', '--config', path, '--json'], { home: dir });
    expect(run.exitCode).toBe(1);
    const failure = JSON.parse(run.stdout) as { error: { code: string; message: string; next_step?: string } };
    expect(failure.error.code).toBe('database_wal_unavailable');
    expect(failure.error.message).toContain(`The database ${databasePath} cannot run in WAL journal mode`);
    expect(run.stderr).not.toContain('ledger_started');
  });

  it('rejects an invalid configuration with field paths and a relative path as usage', async () => {
    const path = join(dir, 'bad.json');
    await writeFile(path, JSON.stringify({ ...ledgerConfig(dir), database_path: 'ledger.db', surprise: true }));
    const run = await runLexec(['ledger', 'serve', '--config', path, '--json']);
    expect(run.exitCode).toBe(1);
    const issues = (JSON.parse(run.stdout) as { error: { issues: { path: string }[] } }).error.issues.map((issue) => issue.path);
    expect(issues.sort()).toEqual(['database_path', 'surprise']);
    expect((await runLexec(['ledger', 'serve', '--config', 'bad.json'], { cwd: dir })).exitCode).toBe(2);
  });
});

describe('ledger logs', () => {
  it('are JSON lines; routine health, version and the marked probe are silent; other reads and failed probes are logged; no secret or value appears', async () => {
    const ledger = await start();
    const admin = (await readFile(ledger.adminCapabilityPath, 'utf8')).trim();
    const before = ledger.events().length;
    await call(ledger.url, 'GET', '/health');
    await call(ledger.url, 'GET', '/version');
    await call(ledger.url, 'GET', '/agents?operational_probe=readiness-7', { token: admin });
    // Give the process a moment: nothing above may produce a line.
    await new Promise((resolve) => setTimeout(resolve, 150));
    expect(ledger.events().slice(before)).toEqual([]);

    const marker = 'PURPOSE-MARKER-93';
    await call(ledger.url, 'GET', '/agents', { token: admin });
    await call(ledger.url, 'GET', '/agents?operational_probe=readiness-7');
    const created = await call<{ agent: { agent_id: string } }>(ledger.url, 'POST', '/agents', { token: admin, body: { name: 'bot' } });
    await call(ledger.url, 'POST', '/authorizations', {
      token: await mintCredential({ url: ledger.url, adminToken: admin }, 'agent', created.body.agent.agent_id),
      body: { amount_units: '100', units_scale: 6, currency: 'USD', purpose: marker },
    });
    await new Promise((resolve) => setTimeout(resolve, 150));
    const logged = ledger.events().slice(before);
    expect(logged.filter((event) => event.route === '/agents' && event.method === 'GET').map((event) => event.status)).toEqual([200, 401]);
    expect(logged.some((event) => event.route === '/authorizations' && event.status === 201)).toBe(true);
    const text = ledger.stderrLines().join('\n');
    expect(text).not.toContain(admin);
    expect(text).not.toMatch(/lexec_(admin|agent)_[A-Za-z0-9_-]{20}/);
    expect(text).not.toContain(marker);
    expect(text).not.toContain('readiness-7');
    for (const line of ledger.stderrLines()) expect(() => JSON.parse(line) as unknown).not.toThrow();
  });
});

describe('two ledger processes on one database', () => {
  it('never let concurrent requests pass the daily cap', async () => {
    const config = ledgerConfig(dir);
    const a = await start(config, 'a.json');
    const b = await start(config, 'b.json');
    const admin = (await readFile(a.adminCapabilityPath, 'utf8')).trim();
    const created = await call<{ agent: { agent_id: string } }>(a.url, 'POST', '/agents', { token: admin, body: { name: 'bot' } });
    const agent = await mintCredential({ url: b.url, adminToken: admin }, 'agent', created.body.agent.agent_id);
    const results = await Promise.all(
      Array.from({ length: 60 }, (_, index) =>
        call((index % 2 === 0 ? a : b).url, 'POST', '/authorizations', { token: agent, body: { amount_units: '900000', units_scale: 6, currency: 'USD' } }),
      ),
    );
    expect(results.filter((result) => result.status === 201)).toHaveLength(22);
    expect(results.filter((result) => result.status === 422)).toHaveLength(38);
    expect(results.every((result) => result.status === 201 || result.status === 422)).toBe(true);
  });
});
