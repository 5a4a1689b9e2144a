import { chmod, mkdir, readFile, stat, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ensurePrivateDirectory, readPrivateFile, writePrivateFile } from '../../src/credentials/private-file.js';
import { makeTempDir, removeDir } from '../support/cli.js';

let dir: string;
beforeEach(async () => {
  dir = await makeTempDir('lexec-private-');
});
afterEach(async () => {
  await removeDir(dir);
});

describe('private files', () => {
  it('writes 0600 in a 0700 directory and reads it back', async () => {
    const path = join(dir, 'credentials', 'x.capability');
    await writePrivateFile(path, 'secret\n');
    expect((await stat(path)).mode & 0o777).toBe(0o600);
    expect((await stat(join(dir, 'credentials'))).mode & 0o777).toBe(0o700);
    expect(await readPrivateFile(path, 'test secret')).toBe('secret');
  });

  it('refuses a directory others can enter, and a symbolic link to a directory', async () => {
    await mkdir(join(dir, 'open'), { mode: 0o755 });
    await chmod(join(dir, 'open'), 0o755);
    await expect(ensurePrivateDirectory(join(dir, 'open'))).rejects.toMatchObject({ code: 'credential_directory_not_private' });
    await mkdir(join(dir, 'real'), { mode: 0o700 });
    await symlink(join(dir, 'real'), join(dir, 'link'));
    await expect(ensurePrivateDirectory(join(dir, 'link'))).rejects.toMatchObject({ code: 'credential_directory_not_private' });
  });

  it('reads only private regular files, never through a link, and never says what is inside', async () => {
    const real = join(dir, 'real.capability');
    await writeFile(real, 'lexec_admin_topsecret', { mode: 0o600 });
    await symlink(real, join(dir, 'link.capability'));
    await expect(readPrivateFile(join(dir, 'link.capability'), 'test secret')).rejects.toMatchObject({ code: 'secret_file_not_private' });
    await chmod(real, 0o644);
    const error = await readPrivateFile(real, 'test secret').catch((caught: unknown) => caught);
    expect(error).toMatchObject({ code: 'secret_file_not_private' });
    expect((error as Error).message).not.toContain('topsecret');
    expect(await readFile(real, 'utf8')).toBe('lexec_admin_topsecret');
    await expect(readPrivateFile(join(dir, 'missing'), 'test secret')).rejects.toMatchObject({ code: 'secret_file_missing' });
  });
});
