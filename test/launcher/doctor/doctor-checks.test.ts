import { describe, expect, it } from 'vitest';
import {
  credentialPermissionsCheck,
  DISK_FAIL_BELOW,
  DISK_WARN_BELOW,
  diskSpaceCheck,
  externalEngineCheck,
  lineageChecks,
  liveCredentialCheck,
  portCheck,
  statePermissionsCheck,
  temporalCliCheck,
  type LineageInput,
} from '../../../src/launcher/doctor/doctor-checks.js';
import { TESTED_TEMPORAL_CLI_VERSION } from '../../../src/executor/engine/temporal/temporal-cli-observation.js';
import { DOCTOR_CHECK_IDS, inReportOrder, overallStatus, passed, skipped, warned, failed, type DoctorCheck, type Lineage } from '../../../src/launcher/doctor/doctor-report.js';

/* The doctor's rules (src/launcher/doctor/doctor-checks.ts, doctor-report.ts) as pure functions. */

const BINARY: Lineage = { product_version: 'v0.3.0', contract_version: 'v4.5', commit: 'a'.repeat(40), build_kind: 'release' };

function byId(checks: readonly DoctorCheck[]): Record<string, DoctorCheck> {
  return Object.fromEntries(checks.map((check) => [check.id, check]));
}

function lineage(overrides: Partial<LineageInput> = {}): Record<string, DoctorCheck> {
  return byId(lineageChecks({ binary: BINARY, generation: BINARY, pinnedLedgerProductVersion: 'v0.3.0', developmentAllowance: false, ...overrides }));
}

describe('overall status', () => {
  it('fails on any failure, warns on any warning, passes otherwise; skipped checks count for nothing', () => {
    expect(overallStatus([passed('disk.space', ''), skipped('temporal.cli', '')])).toBe('pass');
    expect(overallStatus([passed('disk.space', ''), warned('stack.state', '', 'x')])).toBe('warn');
    expect(overallStatus([warned('stack.state', '', 'x'), failed('profile.valid', '', 'x')])).toBe('fail');
    expect(overallStatus([])).toBe('pass');
  });

  it('orders checks as documented, whatever ran first', () => {
    const checks = [passed('disk.space', ''), passed('profile.valid', ''), passed('ports.ledger.free', '')];
    expect(inReportOrder(checks).map((check) => check.id)).toEqual(['profile.valid', 'ports.ledger.free', 'disk.space']);
    expect(new Set(DOCTOR_CHECK_IDS).size).toBe(DOCTOR_CHECK_IDS.length);
  });
});

describe('lineage', () => {
  it('a release build whose generation it rendered, with the allowance off: all pass', () => {
    const checks = lineage();
    expect(Object.values(checks).map((check) => check.status)).toEqual(['pass', 'pass', 'pass']);
    expect(Object.values(checks).every((check) => check.fix === null)).toBe(true);
  });

  it('a release build with the development allowance on in executor.json fails', () => {
    const check = lineage({ developmentAllowance: true })['lineage.development_allowance'];
    expect(check?.status).toBe('fail');
    expect(check?.fix).toContain('lexec stack render');
  });

  it('a development build says so (warn), whatever the allowance', () => {
    const development = { ...BINARY, build_kind: 'development' as const };
    const check = lineage({ binary: development, generation: development, developmentAllowance: true })['lineage.development_allowance'];
    expect(check?.status).toBe('warn');
    expect(check?.summary).toContain('development build');
  });

  it('an unstamped build (commit unknown) fails: one known commit is required', () => {
    const unknown = { ...BINARY, commit: 'unknown', build_kind: 'development' as const };
    expect(lineage({ binary: unknown, generation: unknown })['lineage.commit']?.status).toBe('fail');
  });

  it('a generation rendered by another commit fails a release build and warns a development build', () => {
    const other = { ...BINARY, commit: 'b'.repeat(40) };
    expect(lineage({ generation: other })['lineage.commit']).toMatchObject({ status: 'fail', summary: expect.stringContaining('bbbbbbbbbbbb') as unknown });
    const development = { ...BINARY, build_kind: 'development' as const };
    expect(lineage({ binary: development, generation: { ...other, build_kind: 'development' } })['lineage.commit']?.status).toBe('warn');
  });

  it('another contract or product version, or another pinned ledger version, fails the contract check', () => {
    expect(lineage({ generation: { ...BINARY, contract_version: 'v4.4' } })['lineage.contract']?.status).toBe('fail');
    expect(lineage({ generation: { ...BINARY, product_version: 'v0.2.9' } })['lineage.contract']?.status).toBe('fail');
    const pinned = lineage({ pinnedLedgerProductVersion: 'v0.2.4' })['lineage.contract'];
    expect(pinned?.status).toBe('fail');
    expect(pinned?.summary).toContain('pins ledger v0.2.4');
  });

  it('without an active generation: nothing to compare, only the binary is judged', () => {
    const checks = lineage({ generation: null, pinnedLedgerProductVersion: null, developmentAllowance: null });
    expect(checks['lineage.contract']?.status).toBe('skip');
    expect(checks['lineage.commit']?.status).toBe('pass');
    expect(checks['lineage.development_allowance']?.status).toBe('skip');
  });
});

describe('ports', () => {
  const busy = { port: 7400, free: false as const, holder: { pid: 4242, name: 'nginx' } };

  it('a stopped stack needs them free, and names who holds a busy one', () => {
    expect(portCheck({ component: 'ledger', port: 7400, probe: { port: 7400, free: true }, running: false, ownership: 'unknown', expectedPid: null }).status).toBe('pass');
    const check = portCheck({ component: 'ledger', port: 7400, probe: busy, running: false, ownership: 'unknown', expectedPid: null });
    expect(check).toMatchObject({ id: 'ports.ledger.free', status: 'fail', summary: 'port 7400 is in use by pid 4242 (nginx); the ledger needs it' });
    expect(check.fix).toContain('ports.ledger');
  });

  it("a running stack's ports are held by its own components", () => {
    expect(portCheck({ component: 'executor', port: 7400, probe: busy, running: true, ownership: 'stack', expectedPid: 4242 })).toMatchObject({ status: 'pass', fix: null });
    const foreign = portCheck({ component: 'executor', port: 7400, probe: busy, running: true, ownership: 'foreign', expectedPid: 77 });
    expect(foreign.status).toBe('fail');
    expect(foreign.summary).toContain('pid 4242 (nginx), not by this stack (the executor is pid 77)');
    expect(portCheck({ component: 'executor', port: 7400, probe: { port: 7400, free: true }, running: true, ownership: 'unknown', expectedPid: null }).status).toBe('warn');
  });

  it('a component the generation does not have is skipped', () => {
    expect(portCheck({ component: 'sandbox', port: null, probe: null, running: false, ownership: 'unknown', expectedPid: null }).status).toBe('skip');
    expect(portCheck({ component: 'temporal_ui', port: null, probe: null, running: false, ownership: 'unknown', expectedPid: null })).toMatchObject({
      id: 'ports.temporal_ui.free',
      status: 'skip',
      summary: 'no managed Temporal server in this generation',
    });
  });

  it("a managed Temporal server's port taken by someone else fails, naming the profile key to change", () => {
    const check = portCheck({ component: 'temporal', port: 7630, probe: { ...busy, port: 7630 }, running: false, ownership: 'unknown', expectedPid: null });
    expect(check).toMatchObject({ id: 'ports.temporal.free', status: 'fail' });
    expect(check.fix).toContain('ports.temporal in profile.toml');
  });
});

describe('external Temporal engine', () => {
  it('an address that accepts connections passes; one that does not only warns (it may be started later), naming the key', () => {
    expect(externalEngineCheck({ mode: 'external', address: 'grpc://127.0.0.1:7233', reachable: true })).toMatchObject({ id: 'temporal.external', status: 'pass' });
    const unreachable = externalEngineCheck({ mode: 'external', address: 'grpc://127.0.0.1:7233', reachable: false });
    expect(unreachable).toMatchObject({ status: 'warn', summary: 'nothing accepts connections at the external Temporal frontend grpc://127.0.0.1:7233' });
    expect(unreachable.fix).toContain('workflow_engine.address');
  });

  it('is skipped for the other engines', () => {
    expect(externalEngineCheck({ mode: 'managed_local' }).status).toBe('skip');
    expect(externalEngineCheck({ mode: null }).status).toBe('skip');
  });
});

describe('disk space', () => {
  it('warns below 1 GiB and fails below 100 MiB', () => {
    expect(DISK_WARN_BELOW).toBe(1024n ** 3n);
    expect(DISK_FAIL_BELOW).toBe(100n * 1024n ** 2n);
    expect(diskSpaceCheck({ path: '/p', availableBytes: 5n * 1024n ** 3n + 512n * 1024n ** 2n })).toMatchObject({ status: 'pass', summary: '5.5 GiB available on the filesystem of /p' });
    expect(diskSpaceCheck({ path: '/p', availableBytes: DISK_WARN_BELOW - 1n }).status).toBe('warn');
    expect(diskSpaceCheck({ path: '/p', availableBytes: DISK_WARN_BELOW }).status).toBe('pass');
    expect(diskSpaceCheck({ path: '/p', availableBytes: DISK_FAIL_BELOW - 1n })).toMatchObject({ status: 'fail', summary: expect.stringContaining('99 MiB') as unknown });
    expect(diskSpaceCheck({ path: '/p', availableBytes: null }).status).toBe('skip');
  });
});

describe('credential state', () => {
  it('names each entry that is not private and gives the chmod that fixes it', () => {
    const check = credentialPermissionsCheck({
      dir: '/s/credentials',
      exists: true,
      files: 3,
      problems: [
        { path: '/s/credentials/executor', type: 'directory', mode: 0o755, problem: 'readable_by_others' },
        { path: '/s/credentials/admin.capability', type: 'file', mode: 0o644, problem: 'readable_by_others' },
        { path: '/s/credentials/agent.capability', type: 'other', mode: 0o777, problem: 'symbolic_link' },
      ],
    });
    expect(check.status).toBe('fail');
    expect(check.summary).toContain('/s/credentials/admin.capability (0644)');
    expect(check.summary).toContain('/s/credentials/agent.capability (symbolic link)');
    expect(check.fix).toContain('chmod 700 /s/credentials/executor');
    expect(check.fix).toContain('chmod 600 /s/credentials/admin.capability');
  });

  it('passes a private tree and skips a missing one', () => {
    expect(credentialPermissionsCheck({ dir: '/s/c', exists: true, files: 5, problems: [] }).status).toBe('pass');
    expect(credentialPermissionsCheck({ dir: '/s/c', exists: false, files: 0, problems: [] }).status).toBe('skip');
  });
});

describe('state permissions', () => {
  const state = { roots: ['/p/state', '/p/logs'], directories: 4, files: 9, fixed: null };

  it('warns for files open to others inside private directories (an older release\'s 0644 databases): nobody else can reach them now', () => {
    const check = statePermissionsCheck({ ...state, problems: [{ path: '/p/state/ledger.db', type: 'file', mode: 0o644, problem: 'open_to_others' }] });
    expect(check).toMatchObject({ status: 'warn', summary: expect.stringContaining('/p/state/ledger.db (0644)') as unknown });
    expect(check.summary).toContain('inside private directories');
    expect(check.fix).toContain('lexec stack doctor --fix-permissions');
  });

  it('only warns for a file others could write inside private directories: an older release left its catalog 0664 under umask 002, and the upgraded stack must start', () => {
    const writable = statePermissionsCheck({ ...state, problems: [{ path: '/p/state/provider-catalog.json', type: 'file', mode: 0o664, problem: 'open_to_others' }] });
    expect(writable).toMatchObject({ status: 'warn', summary: expect.stringContaining('/p/state/provider-catalog.json (0664)') as unknown });
  });

  it('fails when others can reach state: a directory open to them, an entry of another user', () => {
    const directory = statePermissionsCheck({ ...state, problems: [{ path: '/p/state/artifacts', type: 'directory', mode: 0o755, problem: 'open_to_others' }] });
    expect(directory.status).toBe('fail');
    const foreign = statePermissionsCheck({ ...state, problems: [{ path: '/p/logs/ledger.log', type: 'file', mode: 0o600, problem: 'not_owned' }] });
    expect(foreign).toMatchObject({ status: 'fail', summary: expect.stringContaining('/p/logs/ledger.log (not owned by this user)') as unknown });
    expect(foreign.fix).toContain('chown');
    expect(foreign.fix).not.toContain('--fix-permissions');
  });

  it('names at most ten entries and counts the rest (artifacts can be thousands)', () => {
    const problems = Array.from({ length: 25 }, (_, index) => ({ path: `/p/state/artifacts/${index}.png`, type: 'file' as const, mode: 0o644, problem: 'open_to_others' as const }));
    const check = statePermissionsCheck({ ...state, problems });
    expect(check.summary).toContain('25 state entries are open to others');
    expect(check.summary).toContain('/p/state/artifacts/9.png (0644), and 15 more');
    expect(check.summary).not.toContain('/p/state/artifacts/10.png');
  });

  it('passes private state (saying what --fix-permissions tightened) and skips a profile with no state yet', () => {
    expect(statePermissionsCheck({ ...state, problems: [] })).toMatchObject({ status: 'pass', summary: expect.stringContaining('4 directories and 9 files') as unknown });
    expect(statePermissionsCheck({ ...state, problems: [], fixed: 3 }).summary).toContain('3 entries tightened now');
    expect(statePermissionsCheck({ ...state, roots: [], directories: 0, files: 0, problems: [] }).status).toBe('skip');
  });
});

describe('Temporal CLI', () => {
  const base = { mode: 'managed_local' as const, path: '/opt/temporal', pinned: '1.4.1' };

  it('is skipped unless the workflow engine is managed_local', () => {
    expect(temporalCliCheck({ mode: 'embedded' }).status).toBe('skip');
    expect(temporalCliCheck({ mode: 'external' }).status).toBe('skip');
  });

  const ran = (version: string | null) => ({ state: 'ran', version, source: 'version_output', reported: version }) as const;

  it('passes only the pinned version, and says what is wrong otherwise', () => {
    expect(temporalCliCheck({ ...base, observed: ran('1.4.1') }).status).toBe('pass');
    expect(temporalCliCheck({ ...base, observed: ran('1.3.0') }).summary).toContain('reports version 1.3.0, the profile pins 1.4.1');
    for (const observed of [{ state: 'missing' }, { state: 'not_a_file' }, { state: 'not_executable' }, { state: 'failed', reason: 'exit code 1' }, ran(null)] as const) {
      expect(temporalCliCheck({ ...base, observed }).status).toBe('fail');
    }
  });

  it('offers both ways out of another version, installing the pinned one or pinning the one there, and names the version lexec is tested with', () => {
    expect(temporalCliCheck({ ...base, pinned: '1.4.0', observed: ran(TESTED_TEMPORAL_CLI_VERSION) }).fix).toBe(
      `Install Temporal CLI 1.4.0 at /opt/temporal, or change workflow_engine.temporal_cli.version in profile.toml to ${TESTED_TEMPORAL_CLI_VERSION}, the version it reports and the one lexec is tested with, then render and activate.`,
    );
    expect(temporalCliCheck({ ...base, observed: ran('1.3.0') }).fix).toBe(
      `Install Temporal CLI 1.4.1 at /opt/temporal, or change workflow_engine.temporal_cli.version in profile.toml to 1.3.0, the version it reports, then render and activate. lexec is tested with Temporal CLI ${TESTED_TEMPORAL_CLI_VERSION}.`,
    );
    // Nothing to pin when there is no CLI, or it reports no version: the settings point at one that does.
    for (const observed of [{ state: 'missing' }, ran(null)] as const) {
      expect(temporalCliCheck({ ...base, observed }).fix).toBe(
        `Install Temporal CLI 1.4.1 at /opt/temporal, or set workflow_engine.temporal_cli in profile.toml to the path and version of a Temporal CLI you have, then render and activate. lexec is tested with Temporal CLI ${TESTED_TEMPORAL_CLI_VERSION}.`,
      );
    }
  });

  it('says when the version came from the Go build info of an unstamped (go install) build', () => {
    const fromBuildInfo = (version: string) => ({ state: 'ran', version, source: 'go_build_info', reported: '0.0.0-DEV' }) as const;
    expect(temporalCliCheck({ ...base, observed: fromBuildInfo('1.4.1') })).toMatchObject({
      status: 'pass',
      summary: 'Temporal CLI /opt/temporal reports the pinned version 1.4.1 (from its Go build info; `--version` says 0.0.0-DEV)',
    });
    expect(temporalCliCheck({ ...base, observed: fromBuildInfo('1.5.1') }).summary).toContain('reports version 1.5.1, the profile pins 1.4.1 (from its Go build info');
    const unstamped = { state: 'ran', version: null, source: 'version_output', reported: '0.0.0-DEV' } as const;
    expect(temporalCliCheck({ ...base, observed: unstamped })).toMatchObject({
      status: 'fail',
      summary: '`/opt/temporal --version` reports 0.0.0-DEV and its Go build info names no release of github.com/temporalio/cli (pinned 1.4.1)',
    });
  });
});

describe('live credential reference', () => {
  it('a keychain reference warns: this release cannot read it', () => {
    expect(liveCredentialCheck({ kind: 'live', reference: { store: 'keychain', service: 'lexec', account: 'fal' }, fileState: null }).status).toBe('warn');
  });

  it('a file reference passes when the file exists and is private, and fails otherwise', () => {
    const reference = { store: 'file' as const, path: '/k/fal.key' };
    expect(liveCredentialCheck({ kind: 'live', reference, fileState: 'present' }).status).toBe('pass');
    expect(liveCredentialCheck({ kind: 'live', reference, fileState: 'readable_by_others' }).fix).toContain('chmod 600 /k/fal.key');
    for (const fileState of ['missing', 'symbolic_link', 'not_regular', 'not_owned'] as const) {
      expect(liveCredentialCheck({ kind: 'live', reference, fileState }).status).toBe('fail');
    }
  });

  it('a sandbox profile has none to check', () => {
    expect(liveCredentialCheck({ kind: 'sandbox' }).status).toBe('skip');
  });
});
