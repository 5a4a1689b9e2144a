import { existsSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { CRASH_FILE_ENV, CRASH_POINTS, createCrashPoints } from '../../src/crash-points.js';
import { makeTempDir, removeDir } from '../support/cli.js';

/*
 * The crash-point switch itself (the processes it kills are proven by test/proof/crash-points.{embedded,temporal}.test.ts):
 * armed only in a development build given the variable, fired once by one process, and a no-op
 * in a release build whatever the environment says.
 */

let dir = '';
beforeEach(async () => {
  dir = await makeTempDir('lexec-crash-points-');
});
afterEach(async () => {
  await removeDir(dir);
});

function counter() {
  const kills = { count: 0 };
  return { kills, kill: () => void (kills.count += 1) };
}

describe('crash points', () => {
  it('a development build given the variable dies at the armed point once, and the file records it', async () => {
    const file = join(dir, 'crash');
    await writeFile(file, 'run.after_submit\n');
    const { kills, kill } = counter();
    const points = createCrashPoints({ buildKind: 'development', env: { [CRASH_FILE_ENV]: file }, kill });
    expect(points.enabled).toBe(true);
    points.reach('run.after_attempt');
    expect(kills.count).toBe(0);
    points.reach('run.after_submit');
    expect(kills.count).toBe(1);
    // Disarmed by the firing: a restarted process passes the same point.
    points.reach('run.after_submit');
    expect(kills.count).toBe(1);
    expect(existsSync(file)).toBe(false);
    expect((await readFile(`${file}.fired`, 'utf8')).trim()).toBe('run.after_submit');
  });

  it('a release build ignores the variable: nothing is read, nothing dies, the file stays armed', async () => {
    const file = join(dir, 'crash');
    await writeFile(file, 'run.after_submit\n');
    const { kills, kill } = counter();
    const points = createCrashPoints({ buildKind: 'release', env: { [CRASH_FILE_ENV]: file }, kill });
    expect(points.enabled).toBe(false);
    for (const point of Object.keys(CRASH_POINTS) as (keyof typeof CRASH_POINTS)[]) points.reach(point);
    expect(kills.count).toBe(0);
    expect((await readFile(file, 'utf8')).trim()).toBe('run.after_submit');
  });

  it('without the variable a development build has no crash points', () => {
    const { kills, kill } = counter();
    const points = createCrashPoints({ buildKind: 'development', env: {}, kill });
    expect(points.enabled).toBe(false);
    points.reach('run.after_submit');
    expect(kills.count).toBe(0);
  });

  it('a relative path is refused at start, naming the variable', () => {
    expect(() => createCrashPoints({ buildKind: 'development', env: { [CRASH_FILE_ENV]: 'crash' } })).toThrow(/LEXEC_DEV_CRASH_FILE must be an absolute path/);
  });

  it('nothing armed (no file) is not a crash', () => {
    const { kills, kill } = counter();
    createCrashPoints({ buildKind: 'development', env: { [CRASH_FILE_ENV]: join(dir, 'absent') }, kill }).reach('run.after_submit');
    expect(kills.count).toBe(0);
  });
});
