import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { cp, mkdir, readFile, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CRASH_FILE_ENV } from '../../src/crash-points.js';
import { makeTempDir, PACKAGE_ROOT, removeDir } from '../support/cli.js';
import { durableHarness } from '../support/durable-stack.js';
import { call, setUpActors } from '../support/ledger.js';
import { ledgerConfig, spawnLedger } from '../support/ledger-process.js';

/*
 * Crash points are a development-build facility: a release build ignores LEXEC_DEV_CRASH_FILE
 * entirely. Proven on a real release-stamped copy of this build (dist, bin, manifest and package
 * file copied; the dependencies linked): its executor runs a real execution past the armed point,
 * its ledger commits and answers a claim past its armed point.
 */

const harness = durableHarness('lexec-crash-release-');

/** A copy of this checkout's build stamped as a release; returns its bin/run.js. */
async function releaseCopy(dir: string): Promise<string> {
  const root = join(dir, 'release-package');
  await mkdir(root);
  for (const part of ['dist', 'bin', 'package.json', 'oclif.manifest.json']) await cp(join(PACKAGE_ROOT, part), join(root, part), { recursive: true });
  await symlink(join(PACKAGE_ROOT, 'node_modules'), join(root, 'node_modules'));
  const stamp = JSON.parse(await readFile(join(PACKAGE_ROOT, 'dist', 'build-stamp.json'), 'utf8')) as { commit: string };
  await writeFile(join(root, 'dist', 'build-stamp.json'), JSON.stringify({ commit: stamp.commit, build_kind: 'release' }));
  return join(root, 'bin', 'run.js');
}

// The copy of the whole build is made once, before the test and outside its timeout.
let copyDir: string;
let bin: string;

beforeAll(async () => {
  copyDir = await makeTempDir('lexec-crash-release-copy-');
  bin = await releaseCopy(copyDir);
}, 300_000);

afterAll(async () => {
  await removeDir(copyDir);
});

describe('crash points in a release build', () => {
  it('an armed point is passed: nothing dies, the arm file is never touched, the execution succeeds', async () => {
    const released = execFileSync(process.execPath, [bin, 'version', '--json'], { encoding: 'utf8', env: { PATH: process.env.PATH ?? '' } });
    expect(JSON.parse(released)).toMatchObject({ result: { build_kind: 'release' } });

    const armFile = join(harness.dir(), 'crash-point');
    await writeFile(armFile, 'run.after_submit\n');
    const s = await harness.stack({ executorBin: bin, executorEnv: { [CRASH_FILE_ENV]: armFile } });
    const tokenId = await s.approvedToken();
    const executionId = await s.submit(tokenId, 1);
    const execution = await s.waitFor(executionId, 'succeeded', (e) => e.state === 'succeeded', 30_000);
    expect(execution.state).toBe('succeeded');
    expect(await readFile(armFile, 'utf8')).toBe('run.after_submit\n');
    expect(existsSync(`${armFile}.fired`)).toBe(false);
    expect(s.executor.events().some((event) => event.event === 'crash_points_enabled' || event.event === 'crash_point_fired')).toBe(false);
    expect((await s.authorization(tokenId)).status).toBe('settled');
  }, 120_000);

  it('a release-built ledger passes its armed point: the claim is answered, the ledger lives on, the arm file is never touched', async () => {
    const armFile = join(harness.dir(), 'crash-point');
    await writeFile(armFile, 'ledger.after_claim_commit\n');
    const ledger = await spawnLedger(harness.dir(), ledgerConfig(join(harness.dir(), 'ledger')), 'ledger.json', 60_000, { bin, env: { [CRASH_FILE_ENV]: armFile } });
    harness.cleanups.push(() => ledger.stop('SIGKILL'));
    const actors = await setUpActors({ url: ledger.url, adminToken: (await readFile(ledger.adminCapabilityPath, 'utf8')).trim() });
    const requested = await call<{ authorization: { token_id: string } }>(ledger.url, 'POST', '/authorizations', { token: actors.agent, body: { amount_units: '900000', units_scale: 6, currency: 'USD' } });
    const claim = await call<{ replayed: boolean; authorization: { status: string } }>(ledger.url, 'POST', `/executor/authorizations/${requested.body.authorization.token_id}/claim`, {
      token: actors.executor,
      body: { execution_id: 'exe_0123456789abcdef0123456789abcdef' },
    });
    expect(claim.status).toBe(200);
    expect(claim.body).toMatchObject({ replayed: false, authorization: { status: 'claimed' } });
    expect((await fetch(`${ledger.url}/health`)).status).toBe(200);
    expect(await readFile(armFile, 'utf8')).toBe('ledger.after_claim_commit\n');
    expect(existsSync(`${armFile}.fired`)).toBe(false);
    expect(ledger.events().some((event) => event.event === 'crash_points_enabled' || event.event === 'crash_point_fired')).toBe(false);
  }, 120_000);
});
