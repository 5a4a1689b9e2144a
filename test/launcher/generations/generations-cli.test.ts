import { chmod, mkdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { listTree, makeTempDir, removeDir } from '../../support/cli.js';
import { sandboxProfileText, writeProfile } from '../../support/example-profiles.js';
import { lexec, snapshotTree, startChild } from '../profiles/profile-fixtures.js';

/*
 * `stack render`, `generations`, `activate`, `rollback` on the real built binary in temporary
 * LEXEC_HOMEs. A running stack is simulated honestly: a real child process whose pid is in the
 * supervisor lock file (the lock is how every command tells whether the stack runs).
 */

interface RenderResult {
  profile: string;
  generation_id: string;
  outcome: 'created' | 'exists';
  active_generation_id: string | null;
  is_active: boolean;
  changed_files: string[];
  affected_components: string[];
}
interface ActivateResult {
  profile: string;
  previous_generation_id: string | null;
  active_generation_id: string;
  changed: boolean;
  changed_files: string[];
  affected_components: string[];
}
interface GenerationsResult {
  active_generation_id: string | null;
  generations: { generation_id: string; active: boolean; build_kind: string }[];
}

let home: string;
let profileDir: string;

beforeEach(async () => {
  home = await makeTempDir('lexec-generations-');
  profileDir = join(home, 'profiles', 'sandbox');
  await writeProfile(home, 'sandbox', await sandboxProfileText());
});

afterEach(async () => {
  await removeDir(home);
});

async function render(args: string[] = []): Promise<RenderResult> {
  const run = await lexec(home, ['stack', 'render', '--json', ...args]);
  expect(run.exitCode, run.stdout).toBe(0);
  return run.json?.result as unknown as RenderResult;
}

async function activate(id: string, verb: 'activate' | 'rollback' = 'activate'): Promise<ActivateResult> {
  const run = await lexec(home, ['stack', verb, '--generation', id, '--json']);
  expect(run.exitCode, run.stdout).toBe(0);
  return run.json?.result as unknown as ActivateResult;
}

/** Edits the profile source the way an operator would: a different sandbox completion time. */
async function editProfile(completeAfterMs: number): Promise<void> {
  const path = join(profileDir, 'profile.toml');
  const text = await readFile(path, 'utf8');
  await writeFile(path, text.replace(/complete_after_ms = \d+/, `complete_after_ms = ${completeAfterMs}`));
}

describe('stack render', () => {
  it('renders the same inputs to the same id and leaves the existing generation untouched', async () => {
    const first = await render();
    expect(first).toMatchObject({ profile: 'sandbox', outcome: 'created', active_generation_id: null, is_active: false });
    expect(first.changed_files).toEqual(['ledger.json', 'executor.json']);
    expect(first.affected_components).toEqual(['ledger', 'executor', 'sandbox']);
    const before = await snapshotTree(join(profileDir, 'generations'));
    const second = await render();
    expect(second).toMatchObject({ generation_id: first.generation_id, outcome: 'exists' });
    expect(await snapshotTree(join(profileDir, 'generations'))).toEqual(before);
  });

  it('writes a generation as read-only files in a private directory, and never activates it', async () => {
    const { generation_id: id } = await render();
    const dir = join(profileDir, 'generations', id);
    expect((await stat(dir)).mode & 0o777).toBe(0o700);
    for (const name of ['executor.json', 'ledger.json', 'manifest.json']) expect((await stat(join(dir, name))).mode & 0o777).toBe(0o400);
    await expect(stat(join(profileDir, 'active'))).rejects.toMatchObject({ code: 'ENOENT' });
  });

  it('renders a changed profile to a new id, lists what changed, and keeps the active generation', async () => {
    const first = await render();
    await activate(first.generation_id);
    await editProfile(900);
    const second = await render();
    expect(second.generation_id).not.toBe(first.generation_id);
    expect(second).toMatchObject({ outcome: 'created', active_generation_id: first.generation_id, is_active: false, changed_files: [], affected_components: ['sandbox'] });
    expect((await readFile(join(profileDir, 'active'), 'utf8')).trim()).toBe(first.generation_id);
    const human = await lexec(home, ['stack', 'render']);
    expect(human.stdout).toContain(`generation ${second.generation_id} (rendered before)`);
    expect(human.stdout).toContain('components affected: sandbox');
    expect(human.stdout).toContain(`lexec stack activate --generation ${second.generation_id}`);
    expect(human.stderr).toBe('');
  });

  it('refuses an invalid profile by field path and creates no generation', async () => {
    await writeFile(join(profileDir, 'profile.toml'), `${await readFile(join(profileDir, 'profile.toml'), 'utf8')}\n[extra]\nkey = 1\n`);
    const run = await lexec(home, ['stack', 'render', '--json']);
    expect(run.exitCode).toBe(1);
    expect(run.json?.error).toMatchObject({ code: 'profile_invalid', issues: [{ path: 'extra', message: 'unknown field' }] });
    await expect(stat(join(profileDir, 'generations'))).rejects.toMatchObject({ code: 'ENOENT' });
  });

  it('a profile that does not exist is reported, and a mistyped --profile leaves no directory behind', async () => {
    for (const args of [
      ['stack', 'render', '--profile', 'typo'],
      ['stack', 'activate', '--profile', 'typo', '--generation', 'g0123456789abcdef'],
      ['stack', 'rollback', '--profile', 'typo', '--generation', 'g0123456789abcdef'],
      // Read-only and stop commands too: "nothing to stop" for a typo would leave the real stack running.
      ['stack', 'stop', '--profile', 'typo'],
      ['stack', 'status', '--profile', 'typo'],
      ['stack', 'generations', '--profile', 'typo'],
      ['stack', 'doctor', '--profile', 'typo'],
    ]) {
      const run = await lexec(home, [...args, '--json']);
      expect(run.exitCode).toBe(1);
      expect(run.json?.error).toMatchObject({ code: 'profile_not_found' });
    }
    expect(await listTree(join(home, 'profiles'))).toEqual(['sandbox', 'sandbox/profile.toml']);
  });

  it('a profile whose profile.toml was removed is still known by its state: status and stop reach it', async () => {
    await mkdir(join(profileDir, 'state'), { recursive: true, mode: 0o700 });
    await rm(join(profileDir, 'profile.toml'));
    const status = await lexec(home, ['stack', 'status', '--json']);
    // A stopped stack is not usable: exit 6, the report printed all the same (docs/exit-codes.md).
    expect(status.exitCode, status.stderr).toBe(7);
    expect(status.json?.result).toMatchObject({ profile: 'sandbox', state: 'stopped', usable: false });
    const stop = await lexec(home, ['stack', 'stop', '--json']);
    expect(stop.exitCode, stop.stderr).toBe(0);
    expect(stop.json?.result).toMatchObject({ outcome: 'already_stopped' });
  });

  it('still renders when the active generation is gone, so a new one can be activated', async () => {
    const first = await render();
    await activate(first.generation_id);
    const dir = join(profileDir, 'generations', first.generation_id);
    await chmod(dir, 0o700);
    await rm(dir, { recursive: true });
    await editProfile(700);
    const second = await render();
    expect(second).toMatchObject({ active_generation_id: first.generation_id, changed_files: ['ledger.json', 'executor.json'] });
    expect((await activate(second.generation_id)).previous_generation_id).toBe(first.generation_id);
  });
});

describe('stack activate and rollback', () => {
  it('activate and rollback work for any retained generation and report what changes', async () => {
    const a = (await render()).generation_id;
    await editProfile(800);
    const b = (await render()).generation_id;
    await editProfile(600);
    const c = (await render()).generation_id;

    expect(await activate(a)).toMatchObject({ previous_generation_id: null, active_generation_id: a, changed: true, affected_components: ['ledger', 'executor', 'sandbox'] });
    expect(await activate(c)).toMatchObject({ previous_generation_id: a, active_generation_id: c, changed: true, changed_files: [], affected_components: ['sandbox'] });
    expect(await activate(b, 'rollback')).toMatchObject({ previous_generation_id: c, active_generation_id: b, changed: true });
    expect(await activate(a, 'rollback')).toMatchObject({ previous_generation_id: b, active_generation_id: a });
    expect(await activate(a)).toMatchObject({ previous_generation_id: a, changed: false, changed_files: [], affected_components: [] });

    const list = await lexec(home, ['stack', 'generations', '--json']);
    const result = list.json?.result as unknown as GenerationsResult;
    expect(result.active_generation_id).toBe(a);
    expect(result.generations.map((generation) => generation.generation_id).sort()).toEqual([a, b, c].sort());
    expect(result.generations.filter((generation) => generation.active).map((generation) => generation.generation_id)).toEqual([a]);
    const human = await lexec(home, ['stack', 'generations']);
    expect(human.stdout.split('\n').find((line) => line.startsWith('active'))).toContain(a);
  });

  it('are refused while the stack runs, and allowed once its supervisor is gone', async () => {
    const a = (await render()).generation_id;
    await activate(a);
    await editProfile(500);
    const b = (await render()).generation_id;
    const supervisor = await startChild();
    try {
      await writeFile(join(profileDir, 'state', 'supervisor.lock'), `${supervisor.pid}\n`);
      for (const verb of ['activate', 'rollback']) {
        const run = await lexec(home, ['stack', verb, '--generation', b, '--json']);
        expect(run.exitCode).toBe(1);
        expect(run.json?.error).toMatchObject({ code: 'stack_running' });
        expect(run.json?.error?.message).toContain(`supervisor pid ${supervisor.pid}`);
        expect(run.json?.error?.next_step).toContain('lexec stack stop');
      }
      expect((await readFile(join(profileDir, 'active'), 'utf8')).trim()).toBe(a);
      const profiles = await lexec(home, ['stack', 'profiles', '--json']);
      expect(profiles.json?.result?.profiles).toMatchObject([{ name: 'sandbox', running: true }]);
    } finally {
      await supervisor.stop();
    }
    expect((await activate(b)).active_generation_id).toBe(b);
  });

  it('validate --generation: a malformed id is a usage error (exit 2), an unknown one exit 1', async () => {
    await render();
    for (const id of ['latest', 'g123', 'G0123456789abcdef', '../../etc']) {
      const run = await lexec(home, ['stack', 'activate', '--generation', id, '--json']);
      expect(run.exitCode).toBe(2);
      expect(run.json?.error).toMatchObject({ kind: 'usage', code: 'generation_id_invalid' });
    }
    const missing = await lexec(home, ['stack', 'rollback', '--json']);
    expect(missing.exitCode).toBe(2);
    const unknown = await lexec(home, ['stack', 'rollback', '--generation', 'g0123456789abcdef', '--json']);
    expect(unknown.exitCode).toBe(1);
    expect(unknown.json?.error).toMatchObject({ kind: 'user', code: 'generation_not_found' });
    await expect(stat(join(profileDir, 'active'))).rejects.toMatchObject({ code: 'ENOENT' });
  });
});

describe('the launcher lock', () => {
  it('a live holder makes another mutating command exit 5; a dead holder is taken over', async () => {
    const first = await render();
    const holder = await startChild();
    const lock = join(profileDir, 'state', 'launcher.lock');
    try {
      await writeFile(lock, `${holder.pid}\n`);
      for (const args of [['stack', 'render'], ['stack', 'activate', '--generation', first.generation_id]]) {
        const run = await lexec(home, [...args, '--json']);
        expect(run.exitCode).toBe(5);
        expect(run.json?.error).toMatchObject({ code: 'profile_locked' });
      }
      // Read-only commands do not take the lock.
      expect((await lexec(home, ['stack', 'generations', '--json'])).exitCode).toBe(0);
    } finally {
      await holder.stop();
    }
    expect((await render()).generation_id).toBe(first.generation_id);
    await expect(stat(lock)).rejects.toMatchObject({ code: 'ENOENT' });
  });
});

describe('damaged generations', () => {
  interface Survey {
    active_generation_id: string | null;
    active_pointer_damaged: boolean;
    generations: { generation_id: string }[];
    damaged: { generation_id: string; problem: string }[];
  }
  const survey = async (): Promise<Survey> => {
    const run = await lexec(home, ['stack', 'generations', '--json']);
    expect(run.exitCode, run.stdout).toBe(0);
    return run.json?.result as unknown as Survey;
  };
  const fileOf = async (id: string, name: string) => {
    const dir = join(profileDir, 'generations', id);
    await chmod(dir, 0o700);
    await chmod(join(dir, name), 0o600);
    return join(dir, name);
  };

  it('generations lists the sound ones and marks the damaged; activate refuses a tampered one before anything; render re-creates its own', async () => {
    const first = await render();
    await activate(first.generation_id);
    await editProfile(900);
    const second = await render();

    await writeFile(await fileOf(first.generation_id, 'manifest.json'), '{ not json');
    await writeFile(await fileOf(second.generation_id, 'executor.json'), '{"tampered":true}\n');
    const listed = await survey();
    expect(listed.generations).toEqual([]);
    expect(listed.damaged.map((entry) => entry.generation_id).sort()).toEqual([first.generation_id, second.generation_id].sort());
    expect(listed.damaged.find((entry) => entry.generation_id === second.generation_id)?.problem).toContain('executor.json');
    const human = await lexec(home, ['stack', 'generations']);
    expect(human.stdout).toContain(`damaged ${second.generation_id}`);

    // Checked before the running-stack check and before the pointer moves.
    const refused = await lexec(home, ['stack', 'activate', '--generation', second.generation_id, '--json']);
    expect(refused.exitCode).toBe(1);
    expect(refused.json?.error).toMatchObject({ code: 'generation_damaged', issues: [{ path: 'executor.json' }] });
    expect((await readFile(join(profileDir, 'active'), 'utf8')).trim()).toBe(first.generation_id);

    // The same TOML renders the same id: the damaged one is set aside and written again.
    const again = await render();
    expect(again).toMatchObject({ generation_id: second.generation_id, outcome: 'repaired' });
    expect((await survey()).generations.map((generation) => generation.generation_id)).toEqual([second.generation_id]);
    expect((await activate(second.generation_id)).active_generation_id).toBe(second.generation_id);
  });

  it('a damaged active pointer does not break generations, which says how to repair it', async () => {
    const first = await render();
    await activate(first.generation_id);
    await writeFile(join(profileDir, 'active'), 'not-an-id\n');
    const listed = await survey();
    expect(listed).toMatchObject({ active_generation_id: null, active_pointer_damaged: true, generations: [{ generation_id: first.generation_id }] });
    expect((await lexec(home, ['stack', 'generations'])).stdout).toContain('The active pointer is damaged');
    expect((await activate(first.generation_id)).active_generation_id).toBe(first.generation_id);
  });
});

describe('generations --keep N', () => {
  it('removes the generations beyond the N newest, never the active one nor the one active before it', async () => {
    const ids: string[] = [];
    for (const ms of [400, 500, 600, 700]) {
      await editProfile(ms);
      ids.push((await render()).generation_id);
      await new Promise((resolve) => setTimeout(resolve, 5)); // distinct rendered_at
    }
    const [oldest, second, third, newest] = ids as [string, string, string, string];
    await activate(third);
    await activate(second); // active: second; previous: third
    const run = await lexec(home, ['stack', 'generations', '--keep', '1', '--json']);
    expect(run.exitCode, run.stdout).toBe(0);
    const result = run.json?.result as unknown as { pruned: string[]; generations: { generation_id: string }[] };
    expect([...result.pruned].sort()).toEqual([oldest].sort());
    expect(result.generations.map((generation) => generation.generation_id).sort()).toEqual([newest, third, second].sort());
    await expect(stat(join(profileDir, 'generations', oldest))).rejects.toMatchObject({ code: 'ENOENT' });
    const bad = await lexec(home, ['stack', 'generations', '--keep', '0', '--json']);
    expect(bad.exitCode).toBe(2);
  });
});
