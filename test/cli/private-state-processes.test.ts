import { chmod, lstat, readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { readManagedTemporalState } from '../../src/executor/engine/temporal/managed-temporal-state.js';
import { durableHarness } from '../support/durable-stack.js';
import { freePorts } from '../support/free-ports.js';
import { spawnLedger, ledgerConfig } from '../support/ledger-process.js';
import { startRunningStack, type RunningStack } from '../support/running-stack.js';
import { readState, recordedProcesses } from '../support/stack-home.js';
import { PINNED_TEMPORAL_VERSION, temporalCli } from '../support/temporal.js';

/*
 * Private state on real processes started with umask 000 (what a careless service manager or
 * shell may hand them): `ledger serve`, `executor serve`, `provider sandbox serve`, the managed
 * Temporal server and a whole `lexec stack start`, each with its state where the configuration
 * puts it. Every file and directory they create is read back while they run (`-wal` and `-shm`
 * exist only then): no group or other bit anywhere. The servers' own umask is read from /proc.
 */

const harness = durableHarness('lexec-private-');
const cli = temporalCli();

/** Runs `start` with this process's umask at 000, so the children it spawns inherit it. */
async function withUmask000<T>(start: () => Promise<T>): Promise<T> {
  const previous = process.umask(0);
  try {
    return await start();
  } finally {
    process.umask(previous);
  }
}

/** Every file and directory under `root` (links are not followed) with its permission bits. */
async function modesUnder(root: string): Promise<Map<string, number>> {
  const modes = new Map<string, number>();
  const visit = async (path: string): Promise<void> => {
    const info = await lstat(path).catch(() => null);
    if (info === null) return;
    modes.set(path, info.mode & 0o777);
    if (info.isDirectory()) for (const entry of await readdir(path)) await visit(join(path, entry));
  };
  await visit(root);
  return modes;
}

/** The entries of `modes` that group or others may read, write or enter, as "path 0644". */
const openToOthers = (modes: Map<string, number>): string[] => [...modes].filter(([, mode]) => (mode & 0o077) !== 0).map(([path, mode]) => `${path} 0${mode.toString(8)}`);

/** The umask a running process has (Linux /proc). */
async function umaskOf(pid: number): Promise<string | undefined> {
  return /^Umask:\s*(\d+)$/m.exec(await readFile(`/proc/${pid}/status`, 'utf8'))?.[1];
}

/** This process's children that are lexec servers, by pid. */
async function serverChildren(): Promise<{ pid: number; command: string }[]> {
  const found = [];
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const stat = await readFile(`/proc/${entry}/stat`, 'utf8').catch(() => '');
    const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
    if (ppid !== process.pid) continue;
    const command = (await readFile(`/proc/${entry}/cmdline`, 'utf8').catch(() => '')).split('\0').join(' ');
    if (command.includes(' serve')) found.push({ pid: Number(entry), command });
  }
  return found;
}

describe('ledger, sandbox and executor started with umask 000', () => {
  it('create every state file 0600 and every directory 0700, databases with their -wal and -shm and the artifacts of an execution included, and run with umask 077', async () => {
    const s = await withUmask000(() => harness.stack());
    const tokenId = await s.approvedToken();
    await s.waitFor(await s.submit(tokenId, 2), 'success', (execution) => execution.state === 'succeeded');

    // The test wrote the configuration files itself; everything under these two roots is the services'.
    const ledgerState = await modesUnder(join(harness.dir(), 'ledger'));
    const executorState = await modesUnder(join(harness.dir(), 'executor'));
    for (const file of ['state/ledger.db', 'state/ledger.db-wal', 'state/ledger.db-shm', 'credentials/admin.capability']) {
      expect(ledgerState.get(join(harness.dir(), 'ledger', file)), file).toBe(0o600);
    }
    for (const file of ['executor.db', 'executor.db-wal', 'executor.db-shm', 'provider-catalog.json']) {
      expect(executorState.get(join(harness.dir(), 'executor', file)), file).toBe(0o600);
    }
    const artifacts = [...executorState.keys()].filter((path) => path.endsWith('.png'));
    expect(artifacts).toHaveLength(2);
    expect(openToOthers(ledgerState)).toEqual([]);
    expect(openToOthers(executorState)).toEqual([]);

    const servers = await serverChildren();
    expect(servers.map((server) => server.command.split(' ').slice(2, 4).join(' ')).sort()).toEqual(['executor serve', 'ledger serve', 'provider sandbox']);
    for (const server of servers) expect(await umaskOf(server.pid), server.command).toBe('0077');
  }, 120_000);

  it('a ledger database an older release left 0644 is tightened at the next start, and the log says so without any content', async () => {
    const dir = harness.dir();
    const config = ledgerConfig(join(dir, 'older'));
    const first = await withUmask000(() => spawnLedger(dir, config));
    await first.stop();
    const database = String(config.database_path);
    await chmod(database, 0o644);
    const second = await withUmask000(() => spawnLedger(dir, config));
    try {
      expect((await lstat(database)).mode & 0o777).toBe(0o600);
      const tightened = second.events().filter((event) => event.event === 'state_file_tightened');
      expect(tightened).toEqual([expect.objectContaining({ path: database, previous_mode: '0644', mode: '0600', level: 40 })]);
      expect(Object.keys(tightened[0] ?? {}).sort()).toEqual(['event', 'level', 'mode', 'path', 'previous_mode', 'service', 'time']);
    } finally {
      await second.stop();
    }
  }, 120_000);

  it.skipIf(cli === null)("the managed Temporal server inherits umask 077: its temporal.db and everything in its data directory are private", async () => {
    const [port = 0, uiPort = 0] = await freePorts(2);
    const s = await withUmask000(() => harness.stack({ engine: { mode: 'managed_local', cli: cli ?? '', version: PINNED_TEMPORAL_VERSION, port, uiPort } }));
    const tokenId = await s.approvedToken();
    await s.waitFor(await s.submit(tokenId, 1), 'success', (execution) => execution.state === 'succeeded');
    const dataDir = join(harness.dir(), 'executor', 'temporal');
    const state = await modesUnder(join(harness.dir(), 'executor'));
    expect(state.get(join(dataDir, 'temporal.db'))).toBe(0o600);
    expect(state.get(join(harness.dir(), 'executor', 'logs', 'temporal.log'))).toBe(0o600);
    expect(openToOthers(state)).toEqual([]);
    const temporal = await readManagedTemporalState(dataDir);
    expect(await umaskOf(temporal?.pid ?? 0)).toBe('0077');
  }, 120_000);
});

describe('lexec stack start with umask 000', () => {
  let stack: RunningStack | undefined;
  afterEach(async () => {
    await stack?.stop();
    stack = undefined;
  });

  it("leaves the profile's state and logs private (handoff, journals, databases, artifacts, logs), its processes run with umask 077, and doctor agrees", async () => {
    stack = await withUmask000(() => startRunningStack());
    const run = await stack.lexec(['run', 'a private lighthouse', '--out', join(stack.home, 'out'), '--json']);
    expect(run.exitCode, run.stderr).toBe(0);
    const { paths } = stack;
    const state = new Map([...(await modesUnder(paths.stateDir)), ...(await modesUnder(paths.logsDir))]);
    for (const path of [paths.ledgerDatabase, `${paths.executorDatabase}-wal`, paths.handoffFile, paths.catalogPath, join(paths.stateDir, 'sandbox-jobs.jsonl'), join(paths.stateDir, 'sandbox-submissions.jsonl'), join(paths.logsDir, 'executor.log')]) {
      expect(state.get(path), path).toBe(0o600);
    }
    expect([...state.keys()].filter((path) => path.startsWith(paths.artifactRoot) && path.endsWith('.png'))).toHaveLength(1);
    expect(openToOthers(state)).toEqual([]);
    for (const process of recordedProcesses(await readState(paths))) expect(await umaskOf(process.pid), process.name).toBe('0077');

    const doctor = await stack.lexec(['stack', 'doctor', '--json']);
    const report = JSON.parse(doctor.stdout) as { result: { checks: { id: string; status: string; summary: string }[] } };
    expect(report.result.checks.find((check) => check.id === 'state.permissions')).toMatchObject({ status: 'pass' });
  }, 120_000);
});
