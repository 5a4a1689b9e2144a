import { execFileSync } from 'node:child_process';
import { cp, readdir, readFile, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { execa } from 'execa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeTempDir, PACKAGE_ROOT, removeDir } from '../support/cli.js';

/*
 * The build stamp, proven on a copy of the sources built for real: an unstamped build says
 * commit `unknown` and kind `development`; a build from a git checkout stamps its full commit;
 * a release build needs a clean tree and ships no source maps.
 */

/**
 * Five builds of the copy, in order, each with what it left. A build compiles the whole source
 * (a minute on a loaded 2-core machine), so they run once, in beforeAll with a bound sized for
 * that, never inside a test's 30 s; the tests read what they left.
 *
 * The copy's tsc emits without type-checking (`noCheck`): its output is the same file for file
 * (isolatedModules: each file is emitted on its own), and what this file proves is the stamp and
 * the source maps, not the types. The types of the same sources are checked by `npm test`'s
 * typecheck and by every real build (`npm run build`, release-package.test.ts's release of HEAD);
 * checking them three times more here cost two thirds of each build's CPU.
 */
const BUILDS_TIMEOUT_MS = 900_000;

interface Build {
  readonly exitCode: number;
  readonly stderr: string;
  /** `lexec version --json` of what it built; null when it failed. */
  readonly version: Record<string, string> | null;
  readonly sourceMaps: readonly string[];
}

let copy: string;
let head: string;
const builds = {} as Record<'unstamped' | 'releaseWithoutCommit' | 'stamped' | 'release' | 'releaseModified', Build>;

async function build(...args: string[]): Promise<Build> {
  const run = await execa(process.execPath, [join(copy, 'scripts', 'build.mjs'), ...args], { cwd: copy, reject: false });
  const exitCode = run.exitCode ?? -1;
  return { exitCode, stderr: run.stderr, version: exitCode === 0 ? await version() : null, sourceMaps: exitCode === 0 ? await sourceMaps() : [] };
}

async function version(): Promise<Record<string, string>> {
  const run = await execa(process.execPath, [join(copy, 'bin', 'run.js'), 'version', '--json'], { cwd: copy });
  return (JSON.parse(run.stdout) as { result: Record<string, string> }).result;
}

async function sourceMaps(): Promise<string[]> {
  return (await readdir(join(copy, 'dist'), { recursive: true })).map(String).filter((entry) => entry.endsWith('.map'));
}

function git(...args: string[]): string {
  return execFileSync('git', ['-c', 'user.name=lexec test', '-c', 'user.email=test@lexec.invalid', ...args], {
    cwd: copy,
    encoding: 'utf8',
  }).trim();
}

beforeAll(async () => {
  copy = await makeTempDir('lexec-build-');
  for (const entry of ['package.json', 'tsconfig.json', 'tsconfig.build.json', '.gitignore', 'src', 'bin', 'scripts']) {
    await cp(join(PACKAGE_ROOT, entry), join(copy, entry), { recursive: true });
  }
  await symlink(join(PACKAGE_ROOT, 'node_modules'), join(copy, 'node_modules'));
  const tsconfig = JSON.parse(await readFile(join(copy, 'tsconfig.build.json'), 'utf8')) as { compilerOptions: Record<string, unknown> };
  await writeFile(join(copy, 'tsconfig.build.json'), `${JSON.stringify({ ...tsconfig, compilerOptions: { ...tsconfig.compilerOptions, noCheck: true } }, null, 2)}\n`);
  builds.unstamped = await build();
  builds.releaseWithoutCommit = await build('--release');
  git('init', '-q');
  git('add', '-A');
  git('commit', '-qm', 'fixture');
  head = git('rev-parse', 'HEAD');
  builds.stamped = await build();
  builds.release = await build('--release');
  await writeFile(join(copy, 'src', 'uncommitted.ts'), 'export const x = 1;\n');
  builds.releaseModified = await build('--release');
}, BUILDS_TIMEOUT_MS);

afterAll(async () => {
  await removeDir(copy);
});

describe('build stamp', () => {
  it('outside a git checkout the build is unstamped: commit unknown, kind development', () => {
    expect(builds.unstamped.exitCode, builds.unstamped.stderr).toBe(0);
    expect(builds.unstamped.version).toMatchObject({ commit: 'unknown', build_kind: 'development' });
  });

  it('a release build refuses to run without a known commit', () => {
    expect(builds.releaseWithoutCommit.exitCode).toBe(1);
    expect(builds.releaseWithoutCommit.stderr).toContain('a release build needs a git checkout');
  });

  it('a build from a git checkout stamps the full commit as a development build', () => {
    expect(builds.stamped.exitCode, builds.stamped.stderr).toBe(0);
    expect(builds.stamped.version).toMatchObject({ commit: head, build_kind: 'development' });
    expect(builds.stamped.sourceMaps).not.toEqual([]);
  });

  it('a release build from a clean tree says release', () => {
    expect(builds.release.exitCode, builds.release.stderr).toBe(0);
    expect(builds.release.version).toMatchObject({ commit: head, build_kind: 'release' });
    // Maps would point at src/, which a release does not ship.
    expect(builds.release.sourceMaps).toEqual([]);
  });

  it('a release build refuses a modified tree', () => {
    expect(builds.releaseModified.exitCode).toBe(1);
    expect(builds.releaseModified.stderr).toContain('clean git tree');
  });
});
