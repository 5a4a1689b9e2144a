import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { BuildInfo } from '../../../src/build-info.js';
import { runDoctor } from '../../../src/launcher/doctor/stack-doctor.js';
import type { DoctorReport } from '../../../src/launcher/doctor/doctor-report.js';
import { profilePaths } from '../../../src/launcher/home/stack-home.js';
import { makeTempDir, removeDir } from '../../support/cli.js';
import { sandboxProfileText, writeProfile } from '../../support/example-profiles.js';
import { lexec, snapshotTree } from '../profiles/profile-fixtures.js';

/*
 * `runDoctor`, the service `stack start` calls, in-process. The tests' binary is a development
 * build; injecting the lineage proves the release-build rules on a generation it rendered.
 */

let home: string;
let built: BuildInfo;

beforeEach(async () => {
  home = await makeTempDir('lexec-run-doctor-');
  await writeProfile(home, 'sandbox', await sandboxProfileText());
  const rendered = await lexec(home, ['stack', 'render', '--json']);
  await lexec(home, ['stack', 'activate', '--generation', String(rendered.json?.result?.generation_id)]);
  built = (await lexec(home, ['version', '--json'])).json?.result as unknown as BuildInfo;
});

afterEach(async () => {
  await removeDir(home);
});

function status(report: DoctorReport, id: string): string | undefined {
  return report.checks.find((check) => check.id === id)?.status;
}

describe('runDoctor', () => {
  it('with the lineage that rendered the generation: the same report the command prints, and nothing written', async () => {
    const before = await snapshotTree(home);
    const report = await runDoctor({ home, paths: profilePaths(home, 'sandbox'), build: built });
    expect(report.overall).toBe('warn');
    expect(status(report, 'lineage.commit')).toBe('pass');
    expect(status(report, 'lineage.development_allowance')).toBe('warn');
    expect(await snapshotTree(home)).toEqual(before);
  });

  it('a release binary fails a generation rendered with the development allowance on', async () => {
    const report = await runDoctor({ home, paths: profilePaths(home, 'sandbox'), build: { ...built, build_kind: 'release' } });
    expect(report.overall).toBe('fail');
    expect(status(report, 'lineage.development_allowance')).toBe('fail');
    // The profile renders differently for a release build (allowance off): render and activate.
    expect(status(report, 'generation.current')).toBe('warn');
  });

  it('a release binary of another commit fails the commit check; another release fails the contract check', async () => {
    const otherCommit = await runDoctor({ home, paths: profilePaths(home, 'sandbox'), build: { ...built, build_kind: 'release', commit: 'f'.repeat(40) } });
    expect(status(otherCommit, 'lineage.commit')).toBe('fail');
    const otherRelease = await runDoctor({ home, paths: profilePaths(home, 'sandbox'), build: { ...built, product_version: 'v9.9.9' } });
    expect(status(otherRelease, 'lineage.contract')).toBe('fail');
    expect(otherRelease.checks.find((check) => check.id === 'lineage.contract')?.summary).toContain('pins ledger');
  });
});
