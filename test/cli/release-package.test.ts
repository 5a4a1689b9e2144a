import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, readFile, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { execa } from 'execa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeTempDir, PACKAGE_ROOT, removeDir } from '../support/cli.js';
import { addStackProfile, jsonResult, stopStack, storedCapabilities, type StackHome } from '../support/stack-home.js';

/*
 * The release tarball as a user gets it: `npm run pack:release` on a clean checkout of HEAD (a
 * clone of the repository this test runs from, so uncommitted work here does not matter), then
 * the README's `npm install -g --ignore-scripts ./release/lexec-<version>-<commit>.tgz` into a temporary
 * prefix, then the installed `lexec` run from a directory outside any repository:
 * `version --json`, `stack start`, `stack doctor`, `run`, `stack stop`.
 */

/**
 * Packing builds lexec for release in a checkout of its own and runs `npm pack` (minutes on a
 * loaded 2-core machine), so every `pack:release` of this file runs once, in the beforeAll below
 * with a bound sized for that, never inside a test's timeout; the tests read what each left.
 */
const PACKS_TIMEOUT_MS = 1_200_000;
/** `npm install -g` of the tarball, from a warm cache. */
const INSTALL_TIMEOUT_MS = 600_000;

let work: string;
let clone: string;
let head: string;
let version: string;
let tarball: string;
let install: { exitCode: number; stderr: string };
let lexecBin: string;
/** Where the release is installed (`--prefix`), and a directory outside any repository. */
let prefix: string;
let outside: string;

interface Pack {
  readonly exitCode: number;
  readonly stdout: string;
  readonly stderr: string;
  /** Whether release/ (or the --out directory) existed once it had run. */
  readonly outputExists: boolean;
}

/** Each pack:release of the file, in the order they ran. */
const packs = {} as {
  uncommitted: Pack;
  lockMismatch: Pack & { readonly zodVersion: string };
  docsNotShipped: Pack;
  release: Pack;
  again: Pack & { readonly tarballKept: boolean; readonly distInTree: boolean; readonly status: string };
};

function git(cwd: string, ...args: string[]): string {
  return execFileSync('git', args, { cwd, encoding: 'utf8' }).trim();
}

/** A checkout of HEAD in `dir`, sharing this tree's node_modules. */
async function checkoutHead(dir: string): Promise<void> {
  await mkdir(dir);
  git(dir, 'init', '-q');
  git(dir, 'fetch', '-q', '--depth', '1', pathToFileURL(PACKAGE_ROOT).href, head);
  git(dir, '-c', 'advice.detachedHead=false', 'checkout', '-q', '--detach', 'FETCH_HEAD');
  await symlink(join(PACKAGE_ROOT, 'node_modules'), join(dir, 'node_modules'));
}

function commit(dir: string, message: string): void {
  git(dir, '-c', 'user.name=lexec test', '-c', 'user.email=test@lexec.invalid', 'commit', '-qam', message);
}

function backToHead(): void {
  git(clone, '-c', 'advice.detachedHead=false', 'checkout', '-q', '--detach', head);
}

function tarList(): string[] {
  return execFileSync('tar', ['-tzf', tarball], { encoding: 'utf8' }).trim().split('\n');
}

function tarFile(name: string): string {
  return execFileSync('tar', ['-xzOf', tarball, `package/${name}`], { encoding: 'utf8' });
}

async function packRelease(out?: string, dir = clone): Promise<Pack> {
  const run = await execa(process.execPath, [join(dir, 'scripts', 'pack-release.mjs'), ...(out === undefined ? [] : ['--out', out])], { cwd: dir, reject: false, timeout: 600_000 });
  return { exitCode: run.exitCode ?? -1, stdout: run.stdout, stderr: run.stderr, outputExists: existsSync(out ?? join(dir, 'release')) };
}

/**
 * The README's `npm install -g --ignore-scripts` of the packed tarball into a prefix of its own,
 * run from a directory outside the repository. The npm cache is warm after `npm ci`; the registry
 * is still there for anything missing.
 */
async function installRelease(): Promise<void> {
  prefix = join(work, 'prefix');
  outside = join(work, 'elsewhere');
  await mkdir(outside);
  const run = await execa('npm', ['install', '-g', '--ignore-scripts', '--prefer-offline', '--no-audit', '--no-fund', '--prefix', prefix, tarball], {
    cwd: outside,
    reject: false,
    timeout: INSTALL_TIMEOUT_MS - 20_000,
  });
  install = { exitCode: run.exitCode ?? -1, stderr: run.stderr };
  lexecBin = join(prefix, 'bin', 'lexec');
}

/** The installed `lexec`, through the bin link npm made, with a minimal environment. */
async function lexec(home: string, cwd: string, args: readonly string[]) {
  const run = await execa(lexecBin, args, {
    cwd,
    env: { PATH: process.env.PATH ?? '', HOME: home, LEXEC_HOME: home },
    extendEnv: false,
    reject: false,
    timeout: 150_000,
    stdin: 'ignore',
  });
  return { exitCode: run.exitCode ?? -1, stdout: run.stdout, stderr: run.stderr };
}

beforeAll(async () => {
  work = await makeTempDir('lexec-release-');
  clone = join(work, 'lexec');
  head = git(PACKAGE_ROOT, 'rev-parse', 'HEAD');
  await checkoutHead(clone);
  version = (JSON.parse(await readFile(join(clone, 'package.json'), 'utf8')) as { version: string }).version;

  // A file that is not committed.
  await writeFile(join(clone, 'notes.txt'), 'not committed\n');
  packs.uncommitted = await packRelease();
  await removeDir(join(clone, 'notes.txt'));

  // A lock file that locks another zod than node_modules holds.
  const lock = JSON.parse(await readFile(join(clone, 'package-lock.json'), 'utf8')) as { packages: Record<string, { version: string }> };
  const zod = lock.packages['node_modules/zod'];
  if (zod === undefined) throw new Error('the lock file locks no zod');
  lock.packages['node_modules/zod'] = { ...zod, version: '0.0.1' };
  await writeFile(join(clone, 'package-lock.json'), `${JSON.stringify(lock, null, 2)}\n`);
  commit(clone, 'another zod locked');
  packs.lockMismatch = { ...(await packRelease()), zodVersion: zod.version };
  backToHead();

  // A package that would not ship what its README links to: packed from a checkout of its own,
  // while HEAD is packed as it is in the first. Its tsc emits without checking types (`noCheck`:
  // the same files, isolatedModules): this pack is about the tarball's check, and the release of
  // HEAD is built as it is, types and all.
  const docsClone = join(work, 'lexec-docs');
  await checkoutHead(docsClone);
  const manifest = JSON.parse(await readFile(join(docsClone, 'package.json'), 'utf8')) as { files: string[] };
  await writeFile(join(docsClone, 'package.json'), `${JSON.stringify({ ...manifest, files: manifest.files.filter((entry) => entry !== 'docs') }, null, 2)}\n`);
  const tsconfig = JSON.parse(await readFile(join(docsClone, 'tsconfig.build.json'), 'utf8')) as { compilerOptions: Record<string, unknown> };
  await writeFile(join(docsClone, 'tsconfig.build.json'), `${JSON.stringify({ ...tsconfig, compilerOptions: { ...tsconfig.compilerOptions, noCheck: true } }, null, 2)}\n`);
  commit(docsClone, 'docs not shipped');

  // HEAD as it is (beside the pack above), then the same commit once more while the release is
  // installed: the second pack is refused only after its build, and neither touches what the
  // other reads.
  [packs.docsNotShipped, packs.release] = await Promise.all([packRelease(join(work, 'refused'), docsClone), packRelease()]);
  tarball = packs.release.stdout;
  const [again] = await Promise.all([packRelease(), packs.release.exitCode === 0 ? installRelease() : undefined]);
  packs.again = { ...again, tarballKept: existsSync(tarball), distInTree: existsSync(join(clone, 'dist')), status: git(clone, 'status', '--porcelain', '--untracked-files=all') };
}, PACKS_TIMEOUT_MS + INSTALL_TIMEOUT_MS);

afterAll(async () => {
  await removeDir(work);
});

describe('npm run pack:release', () => {
  it('refuses a tree with uncommitted changes and names them', () => {
    const run = packs.uncommitted;
    expect(run.exitCode).toBe(1);
    expect(run.stdout).toBe('');
    expect(run.stderr).toContain('not committed');
    expect(run.stderr).toContain('?? notes.txt');
    expect(run.outputExists).toBe(false);
  });

  it('refuses a node_modules that is not what the committed lock file locks', () => {
    const run = packs.lockMismatch;
    expect(run.exitCode).toBe(1);
    expect(run.stderr).toContain(`node_modules/zod: locked 0.0.1, installed ${run.zodVersion}`);
    expect(run.stderr).toContain('npm ci');
    expect(run.outputExists).toBe(false);
  });

  it('checks the packed tarball itself: a package that would not ship what its README links to is refused and deleted', () => {
    const run = packs.docsNotShipped;
    expect(run.exitCode).toBe(1);
    expect(run.stdout).toBe('');
    expect(run.stderr).toMatch(/README\.md links to docs\/[a-z-]+\.md, which is not in the package/);
    expect(run.stderr).toContain('so it was deleted');
    expect(run.outputExists).toBe(false);
  });

  it('packs a release of HEAD into release/, prints only its path on stdout, and leaves the tree as it was', () => {
    expect(packs.release.exitCode, packs.release.stderr).toBe(0);
    expect(tarball).toBe(join(clone, 'release', `lexec-${version}-${head.slice(0, 12)}.tgz`));
    // A release already packed is never replaced: packing the same commit again is refused.
    expect(packs.again.exitCode).toBe(1);
    expect(packs.again.stderr).toContain('already exists (this commit was packed before)');
    expect(packs.again.tarballKept).toBe(true);
    // Built in a checkout of its own: this tree has no dist/, and release/ is ignored, so the
    // tree is still clean and the next release can be packed.
    expect(packs.again.distInTree).toBe(false);
    expect(packs.again.status).toBe('');
  });

  it('the tarball is release-stamped with the full commit and ships no lifecycle script', () => {
    expect(JSON.parse(tarFile('dist/build-stamp.json'))).toEqual({ commit: head, build_kind: 'release' });
    const manifest = JSON.parse(tarFile('package.json')) as Record<string, unknown>;
    expect(manifest).not.toHaveProperty('scripts');
    expect(manifest).not.toHaveProperty('devDependencies');
    expect(manifest).toMatchObject({ private: true, license: 'SEE LICENSE IN LICENSE' });
    // Each direct dependency pinned to the version the lock file tested (a global install reads no lock).
    const lock = JSON.parse(execFileSync('git', ['-C', clone, 'show', `${head}:package-lock.json`], { encoding: 'utf8' })) as { packages: Record<string, { version: string }> };
    const dependencies = manifest.dependencies as Record<string, string>;
    expect(Object.keys(dependencies).length).toBeGreaterThan(10);
    for (const [name, version] of Object.entries(dependencies)) expect(version, name).toBe(lock.packages[`node_modules/${name}`]?.version);
  });

  it('ships the LICENSE and what the README links to, and no source map', () => {
    const entries = tarList().map((entry) => entry.replace(/^package\//, ''));
    expect(entries).toContain('LICENSE');
    expect(tarFile('LICENSE')).toContain('All rights reserved.');
    const readme = tarFile('README.md');
    const links = [...readme.matchAll(/\]\(([^)#\s]+)(#[^)]*)?\)/g)].map((match) => match[1] ?? '').filter((target) => !target.includes(':'));
    expect(links.length).toBeGreaterThan(10);
    for (const target of links) expect(entries, target).toContain(target);
    expect(entries.filter((entry) => entry.endsWith('.map'))).toEqual([]);
    for (const entry of entries) expect(entry).not.toMatch(/^(src|test|scripts|bench)\//);
  });
});

describe('the release installed with npm install -g --ignore-scripts', () => {
  let stack: StackHome;

  beforeAll(async () => {
    stack = await addStackProfile(await makeTempDir('lexec-release-home-'));
    expect(tarball, 'the tarball was packed').toBeDefined();
    expect(install, 'the release was installed').toBeDefined();
  });

  afterAll(async () => {
    await stopStack(stack);
    await removeDir(stack.home);
  });

  it('installs without an install-script warning', () => {
    expect(install.exitCode, install.stderr).toBe(0);
    expect(install.stderr).not.toMatch(/install-scripts|allowScripts/);
    expect(existsSync(lexecBin)).toBe(true);
  });

  it('says it is a release of the packed commit, from a directory outside the repository', async () => {
    const run = await lexec(stack.home, outside, ['version', '--json']);
    expect(run.exitCode, run.stderr).toBe(0);
    expect(jsonResult(run)).toMatchObject({ product_version: `v${version}`, commit: head, build_kind: 'release' });
  });

  it('starts the sandbox stack, passes the doctor, runs a generation with its exact cost, and stops', async () => {
    const start = await lexec(stack.home, outside, ['stack', 'start', '--json']);
    expect(start.exitCode, start.stderr).toBe(0);

    const doctor = await lexec(stack.home, outside, ['stack', 'doctor', '--json']);
    expect(doctor.exitCode, doctor.stdout).toBe(0);
    const report = jsonResult<{ overall: string; running: boolean; checks: { id: string; status: string }[] }>(doctor);
    expect(report.running).toBe(true);
    // Nothing but passes and skips (the sandbox has no Temporal and no live credential).
    expect(report.overall).toBe('pass');
    const status = Object.fromEntries(report.checks.map((check) => [check.id, check.status]));
    // A release build renders the development allowance off, and says so.
    expect(status).toMatchObject({ 'lineage.commit': 'pass', 'lineage.development_allowance': 'pass', 'lineage.contract': 'pass' });

    const out = join(outside, 'images');
    const run = await lexec(stack.home, outside, ['run', 'a red fox in the snow', '--count', '2', '--out', out, '--json']);
    expect(run.exitCode, run.stderr).toBe(0);
    const job = jsonResult<{ spent: { amount_units: string; currency: string }; files: { path: string }[] }>(run);
    // 2 images x 3/1000 USD, settled exactly.
    expect(job.spent).toMatchObject({ amount_units: '6000', currency: 'USD' });
    expect(job.files).toHaveLength(2);
    for (const file of job.files) expect((await readFile(file.path)).subarray(1, 4).toString('latin1')).toBe('PNG');
    for (const capability of await storedCapabilities(stack.paths)) expect(run.stdout + run.stderr + start.stderr).not.toContain(capability);

    const stop = await lexec(stack.home, outside, ['stack', 'stop', '--json']);
    expect(stop.exitCode, stop.stderr).toBe(0);
    const after = jsonResult<{ state: string }>(await lexec(stack.home, outside, ['stack', 'status', '--json']));
    expect(after.state).toBe('stopped');
  }, 300_000);
});
