import { chmod, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { capabilityKind, generateCapability } from '../../src/credentials/capability.js';
import { followPrivateFile, type FollowedFileChange } from '../../src/credentials/followed-private-file.js';
import { writePrivateFile } from '../../src/credentials/private-file.js';
import { makeTempDir, removeDir } from '../support/cli.js';

let dir: string;
beforeEach(async () => {
  dir = await makeTempDir('lexec-followed-');
});
afterEach(async () => {
  await removeDir(dir);
});

/** A followed executor capability in a private file, and what it reported. */
async function followed() {
  const path = join(dir, 'credentials', 'ledger.capability');
  const first = generateCapability('executor');
  await writePrivateFile(path, `${first}\n`);
  const changes: FollowedFileChange[] = [];
  const file = await followPrivateFile(path, 'ledger credential', {
    accept: (content) => capabilityKind(content) === 'executor',
    onChange: (change) => changes.push(change),
  });
  return { path, first, file, changes };
}

describe('a followed private file', () => {
  it('keeps the content while the file is unchanged and takes up a replacement at the next use', async () => {
    const { path, first, file, changes } = await followed();
    expect(await file.current()).toBe(first);
    expect(await file.current()).toBe(first);
    expect(changes).toEqual([]);
    const second = generateCapability('executor');
    await writePrivateFile(path, `${second}\n`);
    expect(await file.current()).toBe(second);
    expect(changes).toEqual([{ outcome: 'followed' }]);
    // The same file rewritten in place (same inode; size and time tell it apart).
    const third = generateCapability('executor');
    await writeFile(path, `${third}\n`);
    expect(await file.current()).toBe(third);
    expect(changes).toHaveLength(2);
  });

  it('keeps the previous content when a replacement is not private, of another kind or missing, and reports each once', async () => {
    const { path, first, file, changes } = await followed();
    await writePrivateFile(path, `${generateCapability('caller')}\n`);
    expect(await file.current()).toBe(first);
    expect(await file.current()).toBe(first);
    expect(changes).toEqual([{ outcome: 'refused', code: 'secret_file_wrong_kind' }]);

    const next = generateCapability('executor');
    await writePrivateFile(path, `${next}\n`);
    await chmod(path, 0o644);
    expect(await file.current()).toBe(first);
    expect(await file.current()).toBe(first);
    expect(changes.at(-1)).toEqual({ outcome: 'refused', code: 'secret_file_not_private' });
    expect(changes).toHaveLength(2);

    await chmod(path, 0o600);
    expect(await file.current()).toBe(next);
    expect(changes.at(-1)).toEqual({ outcome: 'followed' });
  });

  it('reads a change once for uses at the same time', async () => {
    const { path, file, changes } = await followed();
    const second = generateCapability('executor');
    await writePrivateFile(path, `${second}\n`);
    expect(await Promise.all([file.current(), file.current(), file.current()])).toEqual([second, second, second]);
    expect(changes).toEqual([{ outcome: 'followed' }]);
  });
});
