import { chmod, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createSecretFileCache } from '../../src/ledger/webhooks/webhook-secret-file.js';
import { makeTempDir, removeDir } from '../support/cli.js';

/*
 * The webhook worker reads a sink's secret file for every delivery through a cache keyed by the
 * file's identity and times: while nothing about the file changes it answers the content read
 * before; a rewrite, a rename over it or a chmod is seen at the next delivery (a rotated secret
 * signs it; a file no longer private is refused). Real files in a temporary directory.
 */

let dir: string;
beforeEach(async () => {
  dir = await makeTempDir('lexec-webhook-secret-');
});
afterEach(async () => {
  await removeDir(dir);
});

const first = 'a'.repeat(40);
const second = 'b'.repeat(40);

describe('the secret file cache', () => {
  it('answers the same content while the file is unchanged, and the new one after a rewrite or a rename over it', async () => {
    const path = join(dir, 'hook.secret');
    await writeFile(path, `${first}\n`, { mode: 0o600 });
    const cache = createSecretFileCache();
    const read = async () => {
      const reading = await cache.read(path);
      return reading.ok ? reading.secret.toString() : reading.problem;
    };
    expect(await read()).toBe(first);
    expect(await read()).toBe(first);
    await writeFile(path, `${second}\n`, { mode: 0o600 });
    expect(await read()).toBe(second);
    const next = join(dir, 'hook.secret.next');
    await writeFile(next, first, { mode: 0o600 });
    await rename(next, path);
    expect(await read()).toBe(first);
  });

  it('refuses the file once it is no longer private, and a file that is gone', async () => {
    const path = join(dir, 'hook.secret');
    await writeFile(path, first, { mode: 0o600 });
    const cache = createSecretFileCache();
    expect((await cache.read(path)).ok).toBe(true);
    await chmod(path, 0o644);
    expect(await cache.read(path)).toEqual({ ok: false, problem: 'secret_file_not_private' });
    await chmod(path, 0o600);
    expect((await cache.read(path)).ok).toBe(true);
    await rename(path, join(dir, 'elsewhere'));
    expect(await cache.read(path)).toEqual({ ok: false, problem: 'secret_file_missing' });
  });
});
