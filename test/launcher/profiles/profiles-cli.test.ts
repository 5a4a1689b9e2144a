import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { listTree, makeTempDir, removeDir, runLexec } from '../../support/cli.js';
import { EXAMPLES_DIR, exampleText, sandboxProfileText, writeProfile } from '../../support/example-profiles.js';
import { lexec } from './profile-fixtures.js';

/* `stack profiles`, `stack select`, the global `--profile`, and LEXEC_HOME, on the built binary. */

interface ProfilesResult {
  home: string;
  effective: { name: string; source: 'flag' | 'selection' | 'default' };
  profiles: { name: string; kind: string | null; selected: boolean; active_generation_id: string | null; running: boolean; problem: string | null }[];
}

let home: string;

beforeEach(async () => {
  home = await makeTempDir('lexec-profiles-');
});

afterEach(async () => {
  await removeDir(home);
});

async function profiles(args: string[] = []): Promise<ProfilesResult> {
  const run = await lexec(home, ['stack', 'profiles', '--json', ...args]);
  expect(run.exitCode, run.stdout).toBe(0);
  return run.json?.result as unknown as ProfilesResult;
}

describe('stack profiles', () => {
  it('on an empty home lists nothing, says how to start, and creates nothing', async () => {
    expect(await profiles()).toEqual({ home, effective: { name: 'sandbox', source: 'default' }, profiles: [] });
    const human = await lexec(home, ['stack', 'profiles']);
    expect(human.stdout).toContain('`lexec stack start` creates "sandbox"');
    expect(await listTree(home)).toEqual([]);
  });

  it('lists every profile with its kind, the selected one, and the problem of a broken one', async () => {
    await writeProfile(home, 'sandbox', await sandboxProfileText());
    await writeProfile(home, 'live', exampleText('live'));
    await writeProfile(home, 'broken', 'schema_version = 1\nkind = "sandbox"\n');
    await mkdir(join(home, 'profiles', 'not-a-profile'), { recursive: true });
    const result = await profiles();
    expect(result.profiles).toEqual([
      { name: 'broken', kind: null, selected: false, active_generation_id: null, running: false, problem: 'profile_invalid' },
      { name: 'live', kind: 'live', selected: false, active_generation_id: null, running: false, problem: null },
      { name: 'sandbox', kind: 'sandbox', selected: true, active_generation_id: null, running: false, problem: null },
    ]);
  });
});

describe('stack select and --profile', () => {
  beforeEach(async () => {
    await writeProfile(home, 'sandbox', await sandboxProfileText());
    await writeProfile(home, 'other', await sandboxProfileText());
  });

  it('select saves the selection; --profile overrides it for one command only', async () => {
    const selected = await lexec(home, ['stack', 'select', 'other', '--json']);
    expect(selected.json?.result).toEqual({ selected: 'other', previous: null });
    expect((await readFile(join(home, 'selected-profile'), 'utf8')).trim()).toBe('other');
    expect((await profiles()).effective).toEqual({ name: 'other', source: 'selection' });
    expect((await profiles(['--profile', 'sandbox'])).effective).toEqual({ name: 'sandbox', source: 'flag' });

    // A command with --profile acts on that profile; the next one without it is back on the selection.
    const rendered = await lexec(home, ['stack', 'render', '--profile', 'sandbox', '--json']);
    expect(rendered.json?.result).toMatchObject({ profile: 'sandbox' });
    const list = await lexec(home, ['stack', 'generations', '--json']);
    expect(list.json?.result).toMatchObject({ profile: 'other', generations: [] });

    const again = await lexec(home, ['stack', 'select', 'sandbox', '--json']);
    expect(again.json?.result).toEqual({ selected: 'sandbox', previous: 'other' });
    const human = await lexec(home, ['stack', 'select', 'other']);
    expect(human.stdout).toContain('selected profile other (was sandbox)');
  });

  it('refuses to select a profile that does not exist or does not parse', async () => {
    const missing = await lexec(home, ['stack', 'select', 'nowhere', '--json']);
    expect(missing.exitCode).toBe(1);
    expect(missing.json?.error).toMatchObject({ code: 'profile_not_found' });
    // The shipped examples by their absolute path: an npm-installed user has no profiles.example/ beside them.
    expect(missing.json?.error).toMatchObject({ next_step: expect.stringContaining(`Copy one of the shipped examples (${EXAMPLES_DIR}) to `) as unknown });
    await writeFile(join(home, 'profiles', 'other', 'profile.toml'), 'kind = "sandbox"\n');
    const invalid = await lexec(home, ['stack', 'select', 'other', '--json']);
    expect(invalid.exitCode).toBe(1);
    expect(invalid.json?.error).toMatchObject({ code: 'profile_invalid' });
    await expect(readFile(join(home, 'selected-profile'), 'utf8')).rejects.toMatchObject({ code: 'ENOENT' });
  });

  it('a profile name outside the safe alphabet is a usage error (exit 2), for select and for --profile', async () => {
    for (const args of [
      ['stack', 'select', '../etc'],
      ['stack', 'generations', '--profile', 'Upper'],
      ['stack', 'render', '--profile', 'a/b'],
    ]) {
      const run = await lexec(home, [...args, '--json']);
      expect(run.exitCode).toBe(2);
      expect(run.json?.error).toMatchObject({ kind: 'usage', code: 'profile_name_invalid' });
    }
  });

  it('a damaged saved selection is reported, and selecting again repairs it', async () => {
    await writeFile(join(home, 'selected-profile'), 'Not A Name\n');
    const broken = await lexec(home, ['stack', 'generations', '--json']);
    expect(broken.exitCode).toBe(1);
    expect(broken.json?.error).toMatchObject({ code: 'profile_selection_invalid' });
    const repaired = await lexec(home, ['stack', 'select', 'other', '--json']);
    expect(repaired.json?.result).toEqual({ selected: 'other', previous: null });
    expect((await profiles()).effective).toEqual({ name: 'other', source: 'selection' });
  });
});

describe('LEXEC_HOME', () => {
  it.each([
    ['stack', 'profiles'],
    ['stack', 'select', 'sandbox'],
    ['stack', 'render'],
    ['stack', 'generations'],
    ['stack', 'activate', '--generation', 'g0123456789abcdef'],
    ['stack', 'rollback', '--generation', 'g0123456789abcdef'],
    ['stack', 'doctor'],
  ])('a relative one is a usage error (exit 2): %s %s', async (...args) => {
    const run = await runLexec([...args, '--json'], { env: { LEXEC_HOME: 'relative/home' }, cwd: home, home });
    expect(run.exitCode).toBe(2);
    expect((JSON.parse(run.stdout) as { error: { code: string } }).error.code).toBe('lexec_home_not_absolute');
    expect(await listTree(home)).toEqual([]);
  });

  it('defaults to ~/.lexec', async () => {
    const run = await runLexec(['stack', 'profiles', '--json'], { home });
    expect((JSON.parse(run.stdout) as { result: ProfilesResult }).result.home).toBe(join(home, '.lexec'));
  });
});
