import { spawn } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { UserError } from '../../src/errors.js';
import { acquireProcessLock } from '../../src/storage/process-lock.js';
import { makeTempDir, removeDir } from '../support/cli.js';

let dir: string;
beforeEach(async () => {
  dir = await makeTempDir('lexec-lock-');
});
afterEach(async () => {
  await removeDir(dir);
});

const locked = () => new UserError('locked', 'locked', { nextStep: 'wait' });

describe('process lock', () => {
  it('is exclusive while its owner lives and released on request', async () => {
    const path = join(dir, 'x.lock');
    const release = await acquireProcessLock(path, locked);
    expect(await readFile(path, 'utf8')).toBe(`${process.pid}\n`);
    // Another live owner (a sleeping child) holds a second lock.
    const child = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 10000)']);
    await writeFile(join(dir, 'y.lock'), `${child.pid ?? 0}\n`);
    await expect(acquireProcessLock(join(dir, 'y.lock'), locked)).rejects.toMatchObject({ code: 'locked' });
    child.kill('SIGKILL');
    await new Promise((resolve) => child.once('exit', resolve));
    await release();
    await expect(readFile(path, 'utf8')).rejects.toThrow();
  });

  it('takes over at once a lock whose owner was killed', async () => {
    const child = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 10000)']);
    const path = join(dir, 'z.lock');
    await writeFile(path, `${child.pid ?? 0}\n`);
    child.kill('SIGKILL');
    await new Promise((resolve) => child.once('exit', resolve));
    const release = await acquireProcessLock(path, locked);
    expect(await readFile(path, 'utf8')).toBe(`${process.pid}\n`);
    await release();
  });
});
