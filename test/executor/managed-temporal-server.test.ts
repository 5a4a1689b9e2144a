import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, readdir, readFile, readlink, stat, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import Database from 'better-sqlite3';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { UserError } from '../../src/errors.js';
import { probeGrpcHealth } from '../../src/executor/engine/temporal/grpc-health-probe.js';
import {
  createManagedTemporalServer,
  START_ATTEMPTS,
  type ManagedTemporalServer,
  type ManagedTemporalServerOptions,
} from '../../src/executor/engine/temporal/managed-temporal-server.js';
import { TESTED_TEMPORAL_CLI_VERSION } from '../../src/executor/engine/temporal/temporal-cli-observation.js';
import { managedTemporalStatePath, readManagedTemporalState, writeManagedTemporalState } from '../../src/executor/engine/temporal/managed-temporal-state.js';
import { isRunning, processStartTicks, waitUntil } from '../../src/process/process-identity.js';
import { makeTempDir, PACKAGE_ROOT, removeDir } from '../support/cli.js';
import { freePorts } from '../support/free-ports.js';
import { PINNED_TEMPORAL_VERSION } from '../support/temporal.js';

/*
 * The managed Temporal dev server against the real, pinned Temporal CLI. Its path comes from
 * LEXEC_TEMPORAL_CLI, which scripts/test.sh sets; by hand:
 *   export LEXEC_TEMPORAL_CLI="$(../shared/tools/temporal-cli-bin)"
 * Without it the file is skipped (the reason is in the suite's name).
 */
const cli = process.env.LEXEC_TEMPORAL_CLI;
const pinned = process.env.LEXEC_TEMPORAL_CLI_VERSION ?? PINNED_TEMPORAL_VERSION;
const run = promisify(execFile);

let dir: string;
let events: Record<string, unknown>[];
const servers: ManagedTemporalServer[] = [];
const helpers: ChildProcess[] = [];

beforeEach(async () => {
  dir = await makeTempDir('lexec-managed-temporal-');
  events = [];
});

afterEach(async () => {
  for (const server of servers.splice(0)) await server.stop(2_000);
  for (const helper of helpers.splice(0)) helper.kill('SIGKILL');
  await removeDir(dir);
});

const logger = {
  info: (entry: Record<string, unknown>) => events.push({ level: 'info', ...entry }),
  warn: (entry: Record<string, unknown>) => events.push({ level: 'warn', ...entry }),
  error: (entry: Record<string, unknown>) => events.push({ level: 'error', ...entry }),
};

async function settings(overrides: Partial<ManagedTemporalServerOptions> = {}): Promise<ManagedTemporalServerOptions> {
  const [port = 0, uiPort = 0] = await freePorts(2);
  return { cliPath: cli ?? '', pinnedVersion: pinned, dataDir: join(dir, 'temporal'), logDir: join(dir, 'logs'), port, uiPort, namespace: 'lexec', logger, ...overrides };
}

function managed(options: ManagedTemporalServerOptions): ManagedTemporalServer {
  const server = createManagedTemporalServer(options);
  servers.push(server);
  return server;
}

async function startFailure(server: ManagedTemporalServer): Promise<UserError> {
  const error = await server.start().then(
    () => null,
    (thrown: unknown) => thrown,
  );
  if (!(error instanceof UserError)) throw new Error(`expected a UserError, got ${String(error)}`);
  return error;
}

/** Local addresses (hex, as /proc/net/tcp shows them) of every socket `pid` listens on. */
async function listeningAddresses(pid: number): Promise<string[]> {
  const links = await Promise.all((await readdir(`/proc/${pid}/fd`)).map((fd) => readlink(`/proc/${pid}/fd/${fd}`).catch(() => '')));
  const inodes = new Set(links.flatMap((link) => /^socket:\[(\d+)\]$/.exec(link)?.[1] ?? []));
  const rows = [...(await readFile('/proc/net/tcp', 'utf8')).split('\n'), ...(await readFile('/proc/net/tcp6', 'utf8')).split('\n')];
  return rows.map((row) => row.trim().split(/\s+/)).flatMap((fields) => (fields[3] === '0A' && inodes.has(fields[9] ?? '') ? [fields[1] ?? ''] : []));
}

/** A process that just sleeps: a live pid that is certainly not a Temporal server. */
function sleeper(): ChildProcess {
  const child = spawn('sleep', ['60'], { stdio: 'ignore' });
  helpers.push(child);
  return child;
}

/** A stand-in CLI that reports the pinned version and whose `server start-dev` always exits 3, saying why on stderr. */
async function alwaysExitingCli(): Promise<string> {
  const path = join(dir, 'temporal-always-exits');
  const script = [
    '#!/bin/sh',
    `if [ "$1" = "--version" ]; then echo "temporal version ${pinned} (Server 1.29.1, UI 2.42.1)"; exit 0; fi`,
    `echo '{"level":"error","msg":"the stand-in server cannot start"}' >&2`,
    'exit 3',
  ];
  await writeFile(path, `${script.join('\n')}\n`, { mode: 0o755 });
  return path;
}

const eventsNamed = (name: string) => events.filter((event) => event.event === name);

/** Runs the CLI as a client of the server (a separate HOME, so no operator config applies). */
function temporalClient(args: string[], address: string) {
  return run(cli ?? '', [...args, '--address', address], { env: { PATH: process.env.PATH ?? '', HOME: dir }, timeout: 15_000 });
}

const suite = cli === undefined ? 'managed Temporal dev server — skipped: LEXEC_TEMPORAL_CLI is not set (scripts/test.sh sets it)' : 'managed Temporal dev server';

describe.skipIf(cli === undefined)(suite, () => {
  it('starts on loopback, serves gRPC and the UI, publishes its state 0600, and stop() leaves no process', async () => {
    const options = await settings();
    const server = managed(options);
    await server.start();
    const status = server.status();
    expect(status).toMatchObject({ state: 'running', executor_pid: process.pid, address: `127.0.0.1:${options.port}`, ui_url: `http://127.0.0.1:${options.uiPort}`, restarts: 0, last_exit: null });
    const pid = status.pid ?? 0;
    expect(await isRunning(pid)).toBe(true);
    expect(status.pid_start_ticks).toBe(await processStartTicks(pid));

    const statePath = managedTemporalStatePath(options.dataDir);
    expect((await stat(statePath)).mode & 0o777).toBe(0o600);
    const text = await readFile(statePath, 'utf8');
    expect(Object.keys(JSON.parse(text) as object)).toEqual([
      'state_version', 'executor_pid', 'executor_pid_start_ticks', 'pid', 'pid_start_ticks', 'state', 'address', 'ui_url', 'restarts', 'started_at', 'last_exit',
    ]);
    expect(await readManagedTemporalState(options.dataDir)).toEqual(status);
    expect((await stat(options.dataDir)).mode & 0o777).toBe(0o700);
    expect(existsSync(join(options.dataDir, 'temporal.db'))).toBe(true);
    expect((await stat(join(options.logDir, 'temporal.log'))).mode & 0o777).toBe(0o600);

    expect(await probeGrpcHealth(options.port, 2_000)).toEqual({ serving: true });
    // The UI starts beside the frontend; give it a moment.
    await waitUntil(async () => (await fetch(server.uiUrl).catch(() => null))?.status === 200, 5_000);
    expect((await fetch(server.uiUrl)).status).toBe(200);
    // Every port it opens (gRPC, UI, HTTP API, metrics, internal services) is on 127.0.0.1.
    const addresses = await listeningAddresses(pid);
    expect(addresses.length).toBeGreaterThanOrEqual(2);
    for (const address of addresses) expect(address).toMatch(/^0100007F:/);

    expect(await server.stop(10_000)).toBe('stopped');
    expect(await isRunning(pid)).toBe(false);
    expect(await readManagedTemporalState(options.dataDir)).toMatchObject({ state: 'stopped', pid: null, pid_start_ticks: null, last_exit: { code: 0, signal: null } });
    expect(await server.stop(1_000)).toBe('not_running');
  });

  it('keeps its data across stop and start: the same database, an existing non-default namespace, a namespace created meanwhile', async () => {
    const options = await settings();
    const first = managed(options);
    await first.start();
    await temporalClient(['operator', 'namespace', 'create', '--namespace', 'kept'], first.address);
    await first.stop(10_000);

    const second = managed(options);
    await second.start();
    expect(second.status()).toMatchObject({ state: 'running', restarts: 0 });
    const { stdout } = await temporalClient(['operator', 'namespace', 'describe', '--namespace', 'kept', '--output', 'json'], second.address);
    expect(stdout).toContain('"name": "kept"');
    await temporalClient(['operator', 'namespace', 'describe', '--namespace', 'lexec'], second.address);
  });

  it('restarts a child that was killed (restarts 1, a new pid), serves again, and logs both steps', async () => {
    const options = await settings();
    const server = managed(options);
    await server.start();
    const firstPid = server.status().pid ?? 0;
    process.kill(firstPid, 'SIGKILL');
    expect(await waitUntil(() => Promise.resolve(server.status().state === 'running' && server.status().pid !== firstPid), 20_000)).toBe(true);
    const status = server.status();
    expect(status).toMatchObject({ restarts: 1, last_exit: { code: null, signal: 'SIGKILL' } });
    expect(status.pid).not.toBe(firstPid);
    expect(await readManagedTemporalState(options.dataDir)).toEqual(status);
    expect(await probeGrpcHealth(options.port, 2_000)).toEqual({ serving: true });
    expect(events).toContainEqual(expect.objectContaining({ level: 'warn', event: 'temporal_server_exited', pid: firstPid, signal: 'SIGKILL', restart_in_ms: 500 }));
    expect(events).toContainEqual(expect.objectContaining({ event: 'temporal_server_restarted', pid: status.pid, restarts: 1 }));
  });

  it('a child killed while the start waits for it to serve is spawned again after the backoff: start() resolves serving, counts the restart and logs it as a warning', async () => {
    const own: { server?: ManagedTemporalServer; killed?: number } = {};
    const options = await settings({
      onStateChange: (state) => {
        // The first child, as soon as it is spawned: start() has not seen it serve yet.
        const pid = own.server?.status().pid ?? null;
        if (state !== 'starting' || pid === null || own.killed !== undefined) return;
        own.killed = pid;
        process.kill(pid, 'SIGKILL');
      },
    });
    const server = (own.server = managed(options));
    await server.start();
    const status = server.status();
    expect(own.killed).toBeGreaterThan(0);
    expect(status).toMatchObject({ state: 'running', restarts: 1, last_exit: { code: null, signal: 'SIGKILL' } });
    expect(status.pid).not.toBe(own.killed);
    expect(await readManagedTemporalState(options.dataDir)).toEqual(status);
    expect(await probeGrpcHealth(options.port, 2_000)).toEqual({ serving: true });
    expect(eventsNamed('temporal_server_exited')).toEqual([
      expect.objectContaining({ level: 'warn', pid: own.killed, signal: 'SIGKILL', restart_in_ms: 500, while_starting: true, attempt: 1 }),
    ]);
    expect(eventsNamed('temporal_server_started')).toEqual([expect.objectContaining({ level: 'info', pid: status.pid, restarts: 1 })]);
    expect(events.filter((event) => event.level === 'error')).toEqual([]);
  });

  it('a database no child ever served from (its first child killed while it made the schema) is made again; one that served is kept', async () => {
    const options = await settings();
    // What a child killed in its first moments leaves: the file, marked, without its tables (the
    // CLI then skips making them and every later start exits: "no such table: namespaces").
    await mkdir(options.dataDir, { recursive: true, mode: 0o700 });
    const empty = new Database(join(options.dataDir, 'temporal.db'));
    empty.pragma('journal_mode = WAL');
    empty.exec('CREATE TABLE cluster_metadata_info (id INTEGER)');
    empty.close();
    await writeFile(join(options.dataDir, 'temporal.db.unserved'), '');
    const first = managed(options);
    await first.start();
    expect(first.status()).toMatchObject({ state: 'running', restarts: 0 });
    expect(eventsNamed('temporal_database_remade')).toEqual([expect.objectContaining({ level: 'warn', reason: 'never_served' })]);
    expect(existsSync(join(options.dataDir, 'temporal.db.unserved'))).toBe(false);
    await temporalClient(['operator', 'namespace', 'create', '--namespace', 'kept'], first.address);
    await first.stop(10_000);
    // Served from: kept, with what it holds, at the next start.
    const second = managed(options);
    await second.start();
    await temporalClient(['operator', 'namespace', 'describe', '--namespace', 'kept'], second.address);
    expect(eventsNamed('temporal_database_remade')).toHaveLength(1);
  });

  it(`a server that always exits before it serves fails the start after ${START_ATTEMPTS} children with growing delays, saying how many, and the log's advice`, async () => {
    const options = await settings({ cliPath: await alwaysExitingCli() });
    const server = managed(options);
    const error = await startFailure(server);
    expect(error.code).toBe('temporal_server_start_failed');
    expect(error.message).toMatch(new RegExp(`^The managed Temporal dev server on 127\\.0\\.0\\.1:${options.port} exited before it served, ${START_ATTEMPTS} times in \\d+\\.\\d s \\(the last: exit code 3\\)\\.$`));
    expect(error.nextStep).toBe(`Read ${join(options.logDir, 'temporal.log')} for the reason, fix it, then start again.`);
    expect(eventsNamed('temporal_server_spawned')).toHaveLength(START_ATTEMPTS);
    expect(eventsNamed('temporal_server_exited').map((event) => [event.level, event.code, event.restart_in_ms])).toEqual([
      ['warn', 3, 500],
      ['warn', 3, 1_000],
      ['warn', 3, 2_000],
    ]);
    expect(eventsNamed('temporal_server_started')).toEqual([]);
    expect(server.status()).toMatchObject({ state: 'stopped', pid: null, restarts: START_ATTEMPTS - 1, last_exit: { code: 3, signal: null } });
    expect(await readManagedTemporalState(options.dataDir)).toEqual(server.status());
    expect(await readFile(join(options.logDir, 'temporal.log'), 'utf8')).toContain('the stand-in server cannot start');
  });

  it('a stop() while the start waits to spawn again wins: the start fails as stopped, and nothing more is spawned', async () => {
    const own: { server?: ManagedTemporalServer; stopping?: Promise<string> } = {};
    const options = await settings({
      cliPath: await alwaysExitingCli(),
      onStateChange: (state) => {
        if (state !== 'restarting' || own.stopping !== undefined) return;
        // Once the start waits out its 0.5 s before the next attempt.
        own.stopping = new Promise((resolve) => {
          setImmediate(() => {
            resolve(own.server?.stop(2_000) ?? 'no server');
          });
        });
      },
    });
    const server = (own.server = managed(options));
    const error = await startFailure(server);
    expect(error).toMatchObject({ code: 'temporal_server_start_failed', message: expect.stringContaining('was stopped while starting') as unknown });
    expect(await own.stopping).toBe('not_running');
    expect(eventsNamed('temporal_server_spawned')).toHaveLength(1);
    expect(server.status()).toMatchObject({ state: 'stopped', pid: null, restarts: 0 });
  });

  it('refuses a CLI that is not the pinned version, naming the field and both versions, and creates and spawns nothing', async () => {
    const options = await settings({ pinnedVersion: '1.4.0' });
    const error = await startFailure(managed(options));
    expect(error.code).toBe('temporal_cli_version_mismatch');
    expect(error.issues.map((issue) => issue.path)).toEqual(['workflow_engine.temporal_cli.version']);
    expect(error.message).toContain(`reports version ${pinned} (from its Go build info`);
    expect(error.message).toContain('pins 1.4.0');
    // Both ways out, and the release lexec is tested with (the very one the CLI reports, or beside it).
    expect(error.nextStep).toContain(`Install Temporal CLI 1.4.0 at ${options.cliPath}, or change workflow_engine.temporal_cli.version to ${pinned}, the version it reports`);
    expect(error.nextStep).toContain('lexec is tested with');
    expect(error.nextStep).toContain(TESTED_TEMPORAL_CLI_VERSION);
    expect(existsSync(options.dataDir)).toBe(false);
    expect(await probeGrpcHealth(options.port, 500)).toMatchObject({ serving: false });
  });

  it('refuses a relative, a missing and a non-executable CLI path (temporal_cli_unusable, …temporal_cli.path)', async () => {
    const plainFile = join(dir, 'temporal-not-executable');
    await writeFile(plainFile, '#!/bin/sh\n', { mode: 0o644 });
    for (const [cliPath, problem] of [
      ['temporal', 'is not an absolute path'],
      [join(dir, 'no-such-temporal'), 'does not exist'],
      [plainFile, 'is not executable'],
    ] as const) {
      const error = await startFailure(managed(await settings({ cliPath })));
      expect(error).toMatchObject({ code: 'temporal_cli_unusable', issues: [{ path: 'workflow_engine.temporal_cli.path' }] });
      expect(error.message).toContain(problem);
    }
  });

  it('refuses a port something else listens on, naming workflow_engine.port and the holder', async () => {
    const options = await settings();
    const squatter = createServer();
    await new Promise<void>((resolve) => squatter.listen(options.port, '127.0.0.1', resolve));
    try {
      const error = await startFailure(managed(options));
      expect(error).toMatchObject({ code: 'temporal_port_in_use', issues: [{ path: 'workflow_engine.port' }] });
      expect(error.message).toContain(`port ${options.port} is in use by pid ${process.pid}`);
      expect(existsSync(managedTemporalStatePath(options.dataDir))).toBe(false);
    } finally {
      await new Promise((resolve) => squatter.close(resolve));
    }
  });

  it('stops the server of an executor that died (SIGKILL) and starts its own', async () => {
    const options = await settings();
    // A stand-in executor: another process running this module, killed without a chance to stop its child.
    const module = join(PACKAGE_ROOT, 'dist/executor/engine/temporal/managed-temporal-server.js');
    const script = `const { createManagedTemporalServer } = await import(${JSON.stringify(module)});
      const log = () => undefined;
      const server = createManagedTemporalServer({ ...${JSON.stringify({ ...options, logger: undefined })}, logger: { info: log, warn: log, error: log } });
      await server.start();
      process.stdout.write('ready\\n');
      setInterval(() => undefined, 1000);`;
    const executor = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
    helpers.push(executor);
    await new Promise<void>((resolve, reject) => {
      executor.stdout.on('data', (chunk: Buffer) => {
        if (chunk.toString().includes('ready')) resolve();
      });
      executor.once('exit', () => {
        reject(new Error('the stand-in executor exited before its server was ready'));
      });
    });
    const orphan = await readManagedTemporalState(options.dataDir);
    expect(orphan).toMatchObject({ state: 'running', executor_pid: executor.pid });
    const orphanPid = orphan?.pid ?? 0;
    // Held still until the new start reaps it. Left running, an orphan dies of SIGPIPE at its first
    // log line after its executor's death (that executor was the only reader of its output), and the
    // start would find nothing left to stop (CI saw it). The reaper continues it after its SIGTERM.
    process.kill(orphanPid, 'SIGSTOP');
    try {
      executor.kill('SIGKILL');
      await waitUntil(async () => !(await isRunning(executor.pid ?? 0)), 5_000);
      expect(await isRunning(orphanPid)).toBe(true);

      const server = managed(options);
      await server.start();
      expect(events).toContainEqual(expect.objectContaining({ event: 'temporal_orphan_stopped', pid: orphanPid, executor_pid: executor.pid }));
      expect(await isRunning(orphanPid)).toBe(false);
      expect(server.status()).toMatchObject({ state: 'running', executor_pid: process.pid });
      expect(server.status().pid).not.toBe(orphanPid);
    } finally {
      if (await isRunning(orphanPid)) process.kill(orphanPid, 'SIGKILL');
    }
  });

  it('stops a server this very process recorded and never stopped (an earlier start of the same executor)', async () => {
    const options = await settings();
    const left = sleeper();
    await waitUntil(async () => (await processStartTicks(left.pid ?? 0)) !== null, 2_000);
    await mkdir(options.dataDir, { recursive: true, mode: 0o700 });
    writeManagedTemporalState(options.dataDir, {
      ...{ state_version: 1, executor_pid: process.pid, executor_pid_start_ticks: await processStartTicks(process.pid) },
      ...{ pid: left.pid ?? 0, pid_start_ticks: await processStartTicks(left.pid ?? 0), state: 'running', address: 'x', ui_url: 'y', restarts: 0 },
      ...{ started_at: new Date().toISOString(), last_exit: null },
    });
    const server = managed(options);
    await server.start();
    expect(events).toContainEqual(expect.objectContaining({ event: 'temporal_orphan_stopped', pid: left.pid, outcome: 'terminated' }));
    expect(server.status().state).toBe('running');
  });

  it("refuses (temporal_data_in_use) a data directory whose server belongs to another live executor, and signals nothing", async () => {
    const options = await settings();
    const [otherExecutor, otherServer] = [sleeper(), sleeper()];
    await waitUntil(async () => (await processStartTicks(otherServer.pid ?? 0)) !== null, 2_000);
    await mkdir(options.dataDir, { recursive: true, mode: 0o700 });
    writeManagedTemporalState(options.dataDir, {
      ...{ state_version: 1, executor_pid: otherExecutor.pid ?? 0, executor_pid_start_ticks: await processStartTicks(otherExecutor.pid ?? 0) },
      ...{ pid: otherServer.pid ?? 0, pid_start_ticks: await processStartTicks(otherServer.pid ?? 0), state: 'running', address: 'x', ui_url: 'y', restarts: 0 },
      ...{ started_at: new Date().toISOString(), last_exit: null },
    });
    const error = await startFailure(managed(options));
    expect(error).toMatchObject({ code: 'temporal_data_in_use', issues: [{ path: 'workflow_engine.data_dir' }] });
    expect(await isRunning(otherServer.pid ?? 0)).toBe(true);
    expect(await isRunning(otherExecutor.pid ?? 0)).toBe(true);
  });
});
