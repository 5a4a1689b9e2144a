import { chmod, mkdir, readFile, stat, symlink, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { DOCTOR_CHECK_IDS, type DoctorCheck, type DoctorReport } from '../../../src/launcher/doctor/doctor-report.js';
import type { ComponentStatus, SupervisorState } from '../../../src/launcher/supervisor/supervisor-state.js';
import { LOCAL_CATALOG_FACTS } from '../../support/catalog-facts.js';
import { ANSI, listTree, makeTempDir, removeDir } from '../../support/cli.js';
import { profileOnFreePorts, sandboxProfile, sandboxProfileText, tableAt, writeProfile, type TomlTable } from '../../support/example-profiles.js';
import { renderAndActivate } from '../../support/stack-home.js';
import { PINNED_TEMPORAL_VERSION } from '../../support/temporal.js';
import { fakeSupervisorScript, lexec, listenScript, snapshotTree, startChild } from '../profiles/profile-fixtures.js';

/*
 * `lexec stack doctor` on the real built binary in temporary LEXEC_HOMEs: the version-2 report,
 * every check against real files, real sockets held by real child processes, a stand-in
 * Temporal CLI, and the proof that it changes no file and connects to no provider.
 */

let home: string;
let profileDir: string;

beforeEach(async () => {
  home = await makeTempDir('lexec-doctor-');
  profileDir = join(home, 'profiles', 'sandbox');
});

afterEach(async () => {
  await removeDir(home);
});

async function doctor(args: string[] = [], env: Record<string, string> = {}): Promise<{ exitCode: number; report: DoctorReport; stderr: string }> {
  const run = await lexec(home, ['stack', 'doctor', '--json', ...args], env);
  expect(run.json?.ok, run.stdout).toBe(true);
  return { exitCode: run.exitCode, report: run.json?.result as unknown as DoctorReport, stderr: run.stderr };
}

function check(report: DoctorReport, id: (typeof DOCTOR_CHECK_IDS)[number]): DoctorCheck {
  const found = report.checks.find((item) => item.id === id);
  if (found === undefined) throw new Error(`no check ${id}`);
  return found;
}

function statuses(report: DoctorReport): Record<string, string> {
  return Object.fromEntries(report.checks.map((item) => [item.id, item.status]));
}

describe('a healthy sandbox profile', () => {
  it('gives the version-2 report: every check id once, in order, with a fix only where one is needed', async () => {
    await writeProfile(home, 'sandbox', await sandboxProfileText());
    const id = await renderAndActivate(home);
    const { exitCode, report } = await doctor();
    expect(exitCode).toBe(0);
    expect(Object.keys(report).sort()).toEqual(['active_generation_id', 'checks', 'lineage', 'overall', 'permissions_fixed', 'profile', 'provider_catalog', 'report_version', 'running'].sort());
    expect(report).toMatchObject({ report_version: 3, profile: 'sandbox', running: false, active_generation_id: id, permissions_fixed: null });
    expect(report.checks.map((item) => item.id)).toEqual([...DOCTOR_CHECK_IDS]);
    for (const item of report.checks) {
      expect(Object.keys(item).sort()).toEqual(['fix', 'id', 'issues', 'status', 'summary']);
      expect(item.fix === null).toBe(item.status === 'pass' || item.status === 'skip');
    }
    expect(statuses(report)).toMatchObject({
      'profile.valid': 'pass',
      'generation.active': 'pass',
      'generation.current': 'pass',
      'lineage.contract': 'pass',
      'lineage.commit': 'pass',
      // The tests run a development build, and the doctor says so.
      'lineage.development_allowance': 'warn',
      'stack.state': 'pass',
      'temporal.cli': 'skip',
      'ports.ledger.free': 'pass',
      'ports.executor.free': 'pass',
      'ports.sandbox.free': 'pass',
      'credentials.permissions': 'skip',
      // render and activate took the launcher lock in state/ (0700): the state there is, is private.
      'state.permissions': 'pass',
      'live.credential': 'skip',
      'ledger.remote': 'skip',
      'provider.catalog': 'pass',
    });
    expect(['pass', 'warn']).toContain(check(report, 'disk.space').status);
    expect(report.overall).toBe('warn');
  });

  it('reports the lineage it compared: this binary, the generation, the pinned ledger version, the allowance', async () => {
    await writeProfile(home, 'sandbox', await sandboxProfileText());
    await renderAndActivate(home);
    const version = (await lexec(home, ['version', '--json'])).json?.result as Record<string, string>;
    const { report } = await doctor();
    const binary = { product_version: version.product_version, contract_version: version.contract_version, commit: version.commit, build_kind: version.build_kind };
    expect(report.lineage).toEqual({ binary, generation: binary, pinned_ledger_product_version: version.product_version, development_allowance: true });
  });

  it('carries the provider catalog with its four facts independent, never claiming qualification', async () => {
    await writeProfile(home, 'sandbox', await sandboxProfileText());
    await renderAndActivate(home);
    const { report } = await doctor();
    expect(report.provider_catalog).toMatchObject({
      catalog_schema_version: 1,
      providers_mode: 'sandbox',
      targets: [{ target_id: 'lexec:target:v1:flux-schnell', model: 'fal-ai/flux/schnell', policy_versions: { pricing: '2026-11-01' } }],
      facts: LOCAL_CATALOG_FACTS,
    });
    expect(JSON.stringify(report.provider_catalog)).not.toContain('credentials');
  });

  it('prints one line per check on stdout, nothing on stderr, and no colour when asked for none', async () => {
    await writeProfile(home, 'sandbox', await sandboxProfileText());
    await renderAndActivate(home);
    const run = await lexec(home, ['stack', 'doctor', '--color', 'never']);
    expect(run.exitCode).toBe(0);
    expect(run.stderr).toBe('');
    for (const id of DOCTOR_CHECK_IDS) expect(run.stdout).toContain(id);
    expect(run.stdout).toMatch(/overall: warn/);
    expect(run.stdout).not.toMatch(ANSI);
    const coloured = await lexec(home, ['stack', 'doctor', '--json', '--color', 'always']);
    expect(coloured.stdout).not.toMatch(ANSI);
  });
});

describe('a failing check', () => {
  it('exits 3 and still prints the report as the result (ok: true, overall fail)', async () => {
    const run = await lexec(home, ['stack', 'doctor', '--json']);
    expect(run.exitCode).toBe(3);
    expect(run.json).toMatchObject({ json_version: 1, command: 'stack doctor', ok: true, result: { overall: 'fail', profile: 'sandbox' } });
    const report = run.json?.result as unknown as DoctorReport;
    expect(check(report, 'profile.valid')).toMatchObject({ status: 'fail', fix: expect.stringContaining('lexec stack start') as unknown });
    expect(check(report, 'ports.ledger.free').status).toBe('skip');
    // A profile that does not exist is not created by looking at it.
    expect(await listTree(home)).toEqual([]);
    const human = await lexec(home, ['stack', 'doctor']);
    expect(human.exitCode).toBe(3);
    expect(human.stdout).toMatch(/overall: fail .*exit 3/);
  });

  it('lists the field paths of an invalid profile', async () => {
    await writeProfile(home, 'sandbox', await sandboxProfileText((table) => (tableAt(table, 'ports').bogus = 1)));
    const { exitCode, report } = await doctor();
    expect(exitCode).toBe(3);
    expect(check(report, 'profile.valid')).toMatchObject({ status: 'fail', issues: [{ path: 'ports.bogus', message: 'unknown field' }] });
    const human = await lexec(home, ['stack', 'doctor']);
    expect(human.stdout).toContain('ports.bogus: unknown field');
  });

  it('finds a rendered file that no longer matches its manifest', async () => {
    await writeProfile(home, 'sandbox', await sandboxProfileText());
    const id = await renderAndActivate(home);
    const file = join(profileDir, 'generations', id, 'executor.json');
    await chmod(file, 0o600);
    await writeFile(file, (await readFile(file, 'utf8')).replace('"development_allowance": true', '"development_allowance": false'));
    const { exitCode, report } = await doctor();
    expect(exitCode).toBe(3);
    expect(check(report, 'generation.active')).toMatchObject({ status: 'fail', summary: expect.stringContaining('executor.json') as unknown });
    expect(check(report, 'generation.active').fix).toContain('immutable');
  });

  it('names the process holding a port the stopped stack needs', async () => {
    const { text, ports } = await sandboxProfile();
    await writeProfile(home, 'sandbox', text);
    await renderAndActivate(home);
    const holder = await startChild(listenScript([ports.executor]));
    try {
      const { exitCode, report } = await doctor();
      expect(exitCode).toBe(3);
      expect(check(report, 'ports.executor.free')).toMatchObject({
        status: 'fail',
        summary: `port ${ports.executor} is in use by pid ${holder.pid} (node); the executor needs it`,
      });
      expect(check(report, 'ports.ledger.free').status).toBe('pass');
    } finally {
      await holder.stop();
    }
  });
});

describe('changes not yet applied', () => {
  it('an edited profile warns that it renders another generation (render and activate to apply)', async () => {
    const text = await sandboxProfileText();
    await writeProfile(home, 'sandbox', text);
    const id = await renderAndActivate(home);
    await writeProfile(home, 'sandbox', text.replace(/complete_after_ms = \d+/, 'complete_after_ms = 1234'));
    const { exitCode, report } = await doctor();
    expect(exitCode).toBe(0);
    const current = check(report, 'generation.current');
    expect(current.status).toBe('warn');
    expect(current.summary).toContain(`not the active ${id}`);
    expect(current.summary).toContain('components affected sandbox');
    expect(current.fix).toMatch(/Render and activate to apply: .*lexec stack activate --generation g[0-9a-f]{16}/);
    expect(report.active_generation_id).toBe(id);
  });

  it('without an active generation: warn, and ports are taken from the profile', async () => {
    await writeProfile(home, 'sandbox', await sandboxProfileText());
    const { exitCode, report } = await doctor();
    expect(exitCode).toBe(0);
    expect(statuses(report)).toMatchObject({ 'generation.active': 'warn', 'generation.current': 'skip', 'ports.sandbox.free': 'pass', 'provider.catalog': 'skip' });
    expect(report.provider_catalog).toBeNull();
    expect(report.lineage.generation).toBeNull();
  });
});

describe('credential state permissions', () => {
  async function credentials(): Promise<{ dir: string; admin: string; executorDir: string; caller: string }> {
    const dir = join(profileDir, 'state', 'credentials');
    const executorDir = join(dir, 'executor');
    await mkdir(executorDir, { recursive: true, mode: 0o700 });
    await chmod(join(profileDir, 'state'), 0o700);
    await chmod(dir, 0o700);
    const admin = join(dir, 'admin.capability');
    const caller = join(executorDir, 'caller.capability');
    await writeFile(admin, 'not-a-real-capability\n', { mode: 0o600 });
    await writeFile(caller, 'not-a-real-capability\n', { mode: 0o600 });
    return { dir, admin, executorDir, caller };
  }

  it('passes a 0700 directory of 0600 files, and fails a loose one with the chmod that fixes it', async () => {
    await writeProfile(home, 'sandbox', await sandboxProfileText());
    const paths = await credentials();
    expect(check((await doctor()).report, 'credentials.permissions')).toMatchObject({ status: 'pass', summary: expect.stringContaining('2 files') as unknown });

    await chmod(paths.caller, 0o644);
    await chmod(paths.executorDir, 0o755);
    await symlink(paths.admin, join(paths.dir, 'agent.capability'));
    const { exitCode, report } = await doctor();
    expect(exitCode).toBe(3);
    const permissions = check(report, 'credentials.permissions');
    expect(permissions.status).toBe('fail');
    expect(permissions.summary).toContain(`${paths.caller} (0644)`);
    expect(permissions.summary).toContain(`${join(paths.dir, 'agent.capability')} (symbolic link)`);
    expect(permissions.fix).toContain(`chmod 700 ${paths.executorDir}`);
    expect(permissions.fix).toContain(`chmod 600 ${paths.caller}`);
    // Never the content of a credential.
    expect(JSON.stringify(report)).not.toContain('not-a-real-capability');
  });
});

describe('state permissions', () => {
  /** A profile's state as an older release (and a careless umask) left it, and a credential the fix must not touch. */
  async function olderState(): Promise<{ state: string; logs: string; outside: string; credential: string }> {
    await writeProfile(home, 'sandbox', await sandboxProfileText());
    await renderAndActivate(home);
    const state = join(profileDir, 'state');
    const logs = join(profileDir, 'logs');
    await mkdir(join(state, 'artifacts', 'exe_1'), { recursive: true, mode: 0o700 });
    await mkdir(logs, { mode: 0o700 });
    for (const dir of [state, join(state, 'artifacts'), join(state, 'artifacts', 'exe_1'), logs]) await chmod(dir, 0o700);
    for (const file of ['ledger.db', 'ledger.db-wal', 'provider-catalog.json', 'artifacts/exe_1/00.png']) {
      await writeFile(join(state, file), 'a prompt and its receipt', { mode: 0o644 });
      await chmod(join(state, file), 0o644);
    }
    await writeFile(join(logs, 'ledger.log'), '{}\n', { mode: 0o600 });
    // A link in state is not followed: what it points to is not lexec's to change.
    const outside = join(home, 'elsewhere.png');
    await writeFile(outside, 'not state', { mode: 0o644 });
    await chmod(outside, 0o644);
    await symlink(outside, join(state, 'artifacts', 'linked.png'));
    const credential = join(state, 'credentials', 'admin.capability');
    await mkdir(join(state, 'credentials'), { mode: 0o700 });
    await writeFile(credential, 'not-a-real-capability\n', { mode: 0o644 });
    await chmod(credential, 0o644);
    return { state, logs, outside, credential };
  }

  const modeOf = async (path: string): Promise<number> => (await stat(path)).mode & 0o777;

  it('warns for files open to others inside private directories (readable or writable), fails once a directory is open, and names each with its mode', async () => {
    const { state, logs } = await olderState();
    const older = await doctor();
    const warning = check(older.report, 'state.permissions');
    expect(warning.status).toBe('warn');
    expect(warning.summary).toContain('4 state entries are open to others, inside private directories');
    expect(warning.summary).toContain(`${join(state, 'ledger.db')} (0644)`);
    expect(warning.summary).not.toContain('credentials');
    expect(warning.summary).not.toContain('linked.png');
    expect(warning.fix).toContain('lexec stack doctor --fix-permissions');

    await chmod(join(logs, 'ledger.log'), 0o620);
    const writable = await doctor();
    expect(check(writable.report, 'state.permissions').status).toBe('warn');
    expect(check(writable.report, 'state.permissions').summary).toContain(`${join(logs, 'ledger.log')} (0620)`);

    await chmod(join(state, 'artifacts'), 0o755);
    const open = await doctor();
    expect(open.exitCode).toBe(3);
    const failure = check(open.report, 'state.permissions');
    expect(failure.status).toBe('fail');
    expect(failure.summary).toContain(`${join(state, 'artifacts')} (0755)`);
    expect(failure.summary).toContain(`${join(logs, 'ledger.log')} (0620)`);
    // Never the content of a state file.
    expect(JSON.stringify(open.report)).not.toContain('a prompt and its receipt');
  });

  it('--fix-permissions removes group and other bits from the state and logs it found open, lists each, and leaves credentials, links and content alone', async () => {
    const { state, logs, outside, credential } = await olderState();
    await chmod(join(state, 'artifacts'), 0o755);
    await chmod(join(logs, 'ledger.log'), 0o620);
    const before = await readFile(join(state, 'ledger.db'), 'utf8');

    const { exitCode, report } = await doctor(['--fix-permissions']);
    expect(report.permissions_fixed).toEqual([
      { path: join(state, 'artifacts'), previous_mode: '0755', mode: '0700' },
      { path: join(state, 'artifacts', 'exe_1', '00.png'), previous_mode: '0644', mode: '0600' },
      { path: join(state, 'ledger.db'), previous_mode: '0644', mode: '0600' },
      { path: join(state, 'ledger.db-wal'), previous_mode: '0644', mode: '0600' },
      { path: join(state, 'provider-catalog.json'), previous_mode: '0644', mode: '0600' },
      { path: join(logs, 'ledger.log'), previous_mode: '0620', mode: '0600' },
    ]);
    expect(check(report, 'state.permissions')).toMatchObject({ status: 'pass', summary: expect.stringContaining('6 entries tightened now') as unknown });
    for (const path of [join(state, 'ledger.db'), join(state, 'artifacts', 'exe_1', '00.png'), join(logs, 'ledger.log')]) expect(await modeOf(path)).toBe(0o600);
    expect(await modeOf(join(state, 'artifacts'))).toBe(0o700);
    expect(await readFile(join(state, 'ledger.db'), 'utf8')).toBe(before);
    // A loose credential needs a human (was it read? rotate it?): still reported, never silently fixed.
    expect(await modeOf(credential)).toBe(0o644);
    expect(check(report, 'credentials.permissions').status).toBe('fail');
    expect(exitCode).toBe(3);
    expect(await modeOf(outside)).toBe(0o644);

    const again = await lexec(home, ['stack', 'doctor', '--fix-permissions', '--color', 'never']);
    expect(again.stdout).toContain('permissions: nothing to tighten');
    await chmod(join(state, 'ledger.db'), 0o640);
    const human = await lexec(home, ['stack', 'doctor', '--fix-permissions', '--color', 'never']);
    expect(human.stdout).toContain(`permissions: tightened 1 entry\n         0640 -> 0600  ${join(state, 'ledger.db')}`);
  });
});

describe('managed_local: the Temporal CLI', () => {
  async function managedProfile(cliPath: string, version = '1.4.1'): Promise<void> {
    const { text } = await profileOnFreePorts('managed-temporal', (table) => {
      tableAt(table, 'workflow_engine').temporal_cli = { path: cliPath, version };
    });
    await writeProfile(home, 'sandbox', text);
  }

  async function standIn(name: string, version: string, mode = 0o755): Promise<string> {
    const path = join(home, name);
    await writeFile(path, `#!/bin/sh\necho "temporal version ${version} (Server 1.28.0, UI 2.39.0)"\n`, { mode });
    await chmod(path, mode);
    return path;
  }

  it('passes when the configured CLI reports the pinned version', async () => {
    await managedProfile(await standIn('temporal', '1.4.1'));
    expect(check((await doctor()).report, 'temporal.cli')).toMatchObject({ status: 'pass', summary: expect.stringContaining('pinned version 1.4.1') as unknown });
  });

  // The real CLI (LEXEC_TEMPORAL_CLI, set by scripts/test.sh) is built with `go install`: unstamped.
  const realCli = process.env.LEXEC_TEMPORAL_CLI;
  it.skipIf(realCli === undefined)('passes the go-install-built CLI by the release in its Go build info, and says so', async () => {
    const pinned = process.env.LEXEC_TEMPORAL_CLI_VERSION ?? PINNED_TEMPORAL_VERSION;
    await managedProfile(realCli ?? '', pinned);
    expect(check((await doctor()).report, 'temporal.cli')).toMatchObject({
      status: 'pass',
      summary: `Temporal CLI ${realCli ?? ''} reports the pinned version ${pinned} (from its Go build info; \`--version\` says 0.0.0-DEV)`,
    });
  });

  it('fails another version, a missing file and a file that is not executable', async () => {
    await managedProfile(await standIn('temporal-old', '1.3.0'));
    const other = await doctor();
    expect(other.exitCode).toBe(3);
    expect(check(other.report, 'temporal.cli').summary).toContain('reports version 1.3.0, the profile pins 1.4.1');
    expect(check(other.report, 'temporal.cli').fix).toContain(`or change workflow_engine.temporal_cli.version in profile.toml to 1.3.0, the version it reports, then render and activate. lexec is tested with Temporal CLI ${PINNED_TEMPORAL_VERSION}.`);

    await managedProfile(join(home, 'no-such-temporal'));
    expect(check((await doctor()).report, 'temporal.cli').summary).toContain('does not exist');

    await managedProfile(await standIn('temporal-plain', '1.4.1', 0o644));
    expect(check((await doctor()).report, 'temporal.cli').summary).toContain('not executable');
  });
});

describe('a live profile', () => {
  async function liveProfile(credential: TomlTable): Promise<void> {
    const { text } = await profileOnFreePorts('live', (table) => {
      tableAt(table, 'live').credential = credential;
    });
    await writeProfile(home, 'live', text);
  }

  it('checks that the credential file exists and is private, without reading it', async () => {
    const keyFile = join(home, 'fal.key');
    await liveProfile({ store: 'file', path: keyFile });
    const missing = await doctor(['--profile', 'live']);
    expect(missing.exitCode).toBe(3);
    expect(check(missing.report, 'live.credential')).toMatchObject({ status: 'fail', summary: expect.stringContaining('does not exist') as unknown });
    expect(check(missing.report, 'ports.sandbox.free').status).toBe('skip');

    await writeFile(keyFile, 'Key fal-not-a-real-key-0000\n', { mode: 0o600 });
    const present = await doctor(['--profile', 'live']);
    expect(check(present.report, 'live.credential').status).toBe('pass');
    expect(JSON.stringify(present.report)).not.toContain('fal-not-a-real-key');

    await chmod(keyFile, 0o644);
    expect(check((await doctor(['--profile', 'live'])).report, 'live.credential').fix).toContain(`chmod 600 ${keyFile}`);
  });

  it('warns that a keychain reference cannot be read in this release, and never claims live qualification', async () => {
    await liveProfile({ store: 'keychain', service: 'lexec', account: 'fal' });
    await renderAndActivate(home, 'live');
    const { report } = await doctor(['--profile', 'live']);
    expect(check(report, 'live.credential')).toMatchObject({ status: 'warn', summary: expect.stringContaining('keychain') as unknown });
    expect(report.provider_catalog?.providers_mode).toBe('live');
    expect(report.provider_catalog?.facts).toMatchObject({ configured: true, credential_reference_present: false, live_qualified: false, live_qualified_reason: 'not_performed' });
    expect(JSON.stringify(report.provider_catalog)).not.toContain('keychain');
  });
});

describe('a running stack', () => {
  /** The supervisor.json a running supervisor publishes, with these component pids and ports. */
  async function publishState(generationId: string, supervisorPid: number, components: Record<'ledger' | 'executor' | 'sandbox', [number | undefined, number]>): Promise<void> {
    const now = new Date().toISOString();
    const status = ([pid, port]: [number | undefined, number]): ComponentStatus => ({
      state: 'running',
      pid: pid ?? null,
      pid_start_ticks: null,
      port,
      started_at: now,
      ready_at: now,
      restarts: 0,
      last_exit: null,
      probe_error: null,
    });
    const state: SupervisorState = {
      state_version: 1,
      profile: 'sandbox',
      generation_id: generationId,
      supervisor_pid: supervisorPid,
      supervisor_pid_start_ticks: null,
      started_at: now,
      phase: 'running',
      step: null,
      failure: null,
      agent: null,
      components: { ledger: status(components.ledger), executor: status(components.executor), sandbox: status(components.sandbox) },
    };
    await writeFile(join(profileDir, 'state', 'supervisor.json'), JSON.stringify(state));
  }

  it("expects the ports to be held by the stack's own components", async () => {
    const { text, ports } = await sandboxProfile();
    await writeProfile(home, 'sandbox', text);
    const id = await renderAndActivate(home);
    const supervisor = await startChild(fakeSupervisorScript([ports.ledger, ports.executor, ports.sandbox]));
    try {
      const [ledgerPid, executorPid, sandboxPid] = JSON.parse(supervisor.firstOutput) as number[];
      await writeFile(join(profileDir, 'state', 'supervisor.lock'), `${supervisor.pid}\n`);
      await publishState(id, supervisor.pid, { ledger: [ledgerPid, ports.ledger], executor: [executorPid, ports.executor], sandbox: [sandboxPid, ports.sandbox] });
      const { exitCode, report } = await doctor();
      // This stand-in supervisor never publishes a handoff: the one failing check, as it should be.
      expect(report.checks.filter((item) => item.status === 'fail').map((item) => item.id)).toEqual(['stack.handoff']);
      expect(exitCode).toBe(3);
      expect(report.running).toBe(true);
      expect(check(report, 'stack.state').summary).toContain(`supervisor pid ${supervisor.pid}`);
      expect(check(report, 'ports.ledger.free')).toMatchObject({ status: 'pass', summary: `port ${ports.ledger} is held by this stack's ledger (pid ${ledgerPid})` });
      expect(check(report, 'ports.sandbox.free').status).toBe('pass');

      // Without the published state, the supervisor's process tree tells the same.
      await writeFile(join(profileDir, 'state', 'supervisor.json'), '{ being rewritten');
      expect(check((await doctor()).report, 'ports.executor.free').status).toBe('pass');
    } finally {
      await supervisor.stop();
    }
    // Its lock remains, naming a pid that is gone: a stack that did not stop cleanly.
    expect(check((await doctor()).report, 'stack.state')).toMatchObject({ status: 'warn', summary: expect.stringContaining(`pid ${supervisor.pid}, which is gone`) as unknown });
  });

  it("fails a port of the running stack held by someone else's process", async () => {
    const { text, ports } = await sandboxProfile();
    await writeProfile(home, 'sandbox', text);
    const id = await renderAndActivate(home);
    const supervisor = await startChild(fakeSupervisorScript([ports.ledger, ports.executor]));
    const intruder = await startChild(listenScript([ports.sandbox]));
    try {
      await writeFile(join(profileDir, 'state', 'supervisor.lock'), `${supervisor.pid}\n`);
      const { exitCode, report } = await doctor();
      expect(exitCode).toBe(3);
      expect(check(report, 'ports.sandbox.free')).toMatchObject({ status: 'fail', summary: `port ${ports.sandbox} is in use by pid ${intruder.pid} (node), not by this stack` });
      expect(check(report, 'ports.ledger.free').status).toBe('pass');

      // With the state the supervisor published, the failure also names the pid recorded for the sandbox.
      const [ledgerPid, executorPid] = JSON.parse(supervisor.firstOutput) as number[];
      await publishState(id, supervisor.pid, { ledger: [ledgerPid, ports.ledger], executor: [executorPid, ports.executor], sandbox: [424242, ports.sandbox] });
      expect(check((await doctor()).report, 'ports.sandbox.free').summary).toBe(
        `port ${ports.sandbox} is in use by pid ${intruder.pid} (node), not by this stack (the sandbox is pid 424242)`,
      );
    } finally {
      await intruder.stop();
      await supervisor.stop();
    }
  });
});

describe('read-only', () => {
  it('changes no file and connects to no provider, even when it fails', async () => {
    const { text, ports } = await sandboxProfile();
    await writeProfile(home, 'sandbox', text);
    await renderAndActivate(home);
    // Some state, as a stack that ran once leaves it.
    await mkdir(join(profileDir, 'state', 'credentials', 'executor'), { recursive: true, mode: 0o700 });
    await writeFile(join(profileDir, 'state', 'credentials', 'admin.capability'), 'x\n', { mode: 0o600 });
    await mkdir(join(profileDir, 'logs'), { recursive: true });
    await writeFile(join(profileDir, 'logs', 'executor.log'), '{"event":"executor_started"}\n');
    await writeFile(join(profileDir, 'state', 'supervisor.lock'), '999999999\n');

    // The sandbox provider's port: a listening socket that counts every connection made to it.
    const { sandbox } = ports;
    let connections = 0;
    const provider: Server = createServer((socket) => {
      connections += 1;
      socket.destroy();
    });
    await new Promise<void>((resolve) => provider.listen({ port: sandbox, host: '127.0.0.1' }, resolve));
    try {
      const before = await snapshotTree(home);
      const json = await lexec(home, ['stack', 'doctor', '--json']);
      const human = await lexec(home, ['stack', 'doctor']);
      expect(json.exitCode).toBe(3);
      expect(human.exitCode).toBe(3);
      expect(check(json.json?.result as unknown as DoctorReport, 'ports.sandbox.free').summary).toContain(`pid ${process.pid}`);
      expect(await snapshotTree(home)).toEqual(before);
      expect(connections).toBe(0);
    } finally {
      await new Promise((resolve) => provider.close(resolve));
    }
  });
});
