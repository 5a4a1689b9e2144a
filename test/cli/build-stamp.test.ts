import { execFileSync } from 'node:child_process';
import { cp, readdir, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { execa } from 'execa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeTempDir, PACKAGE_ROOT, removeDir } from '../support/cli.js';

/*
 * The build stamp, proven on a copy of the sources built for real: an unstamped build says
 * commit `unknown` and kind `development`; a build from a git checkout stamps its full commit;
 * a release build needs a clean tree and ships no source maps.
 */

let copy: string;

async function build(...args: string[]) {
  return execa(process.execPath, [join(copy, 'scripts', 'build.mjs'), ...args], { cwd: copy, reject: false });
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
});

afterAll(async () => {
  await removeDir(copy);
});

describe('build stamp', () => {
  it('outside a git checkout the build is unstamped: commit unknown, kind development', async () => {
    const result = await build();
    expect(result.exitCode).toBe(0);
    expect(await version()).toMatchObject({ commit: 'unknown', build_kind: 'development' });
  });

  it('a release build refuses to run without a known commit', async () => {
    const result = await build('--release');
    expect(result.exitCode).toBe(1);
    expect(result.stderr).toContain('a release build needs a git checkout');
  });

  it('a build from a git checkout stamps the full commit as a development build', async () => {
    git('init', '-q');
    git('add', '-A');
    git('commit', '-qm', 'fixture');
    const head = git('rev-parse', 'HEAD');
    expect((await build()).exitCode).toBe(0);
    expect(await version()).toMatchObject({ commit: head, build_kind: 'development' });
    expect(await sourceMaps()).not.toEqual([]);
  });

  it('a release build from a clean tree says release', async () => {
    const head = git('rev-parse', 'HEAD');
    const result = await build('--release');
    expect(result.exitCode).toBe(0);
    expect(await version()).toMatchObject({ commit: head, build_kind: 'release' });
    // Maps would point at src/, which a release does not ship.
    expect(await sourceMaps()).toEqual([]);
  });

  it('a release build refuses a modified tree', async () => {
    await writeFile(join(copy, 'src', 'uncommitted.ts'), 'export const x = 1;\n');
    const result = await build('--release');
    expect(result.exitCode).toBe(1);
    expect(result.stderr).toContain('clean git tree');
  });
});
