import { createHash, randomBytes } from 'node:crypto';
import { constants, createReadStream, type ReadStream } from 'node:fs';
import { mkdir, open, readdir, rename, unlink } from 'node:fs/promises';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { BugError } from '../errors.js';

export interface StoredArtifact {
  /** Path relative to the artifact root. Never leaves the process (not in any response or log). */
  readonly storageKey: string;
  readonly sizeBytes: number;
  readonly sha256: string;
}

const EXTENSIONS: Record<string, string> = { 'image/png': 'png', 'image/jpeg': 'jpg', 'image/webp': 'webp' };

/**
 * Artifact bytes on disk under one root. Writes are atomic — temporary file, fsync, rename,
 * fsync of the directory — so a crash leaves either the whole artifact or none of it.
 */
export function createArtifactStore(root: string) {
  function pathOf(storageKey: string): string {
    const path = resolve(root, storageKey);
    const inside = relative(root, path);
    if (inside === '' || inside.startsWith('..') || inside.startsWith(sep)) throw new BugError('an artifact storage key points outside the artifact root');
    return path;
  }

  return {
    async write(executionId: string, ordinal: number, mediaType: string, bytes: Uint8Array): Promise<StoredArtifact> {
      if (!/^exe_[0-9a-f]{32}$/.test(executionId)) throw new BugError('artifact for a malformed execution id');
      const sha256 = createHash('sha256').update(bytes).digest('hex');
      const storageKey = join(executionId, `${String(ordinal).padStart(2, '0')}-${sha256.slice(0, 16)}.${EXTENSIONS[mediaType] ?? 'bin'}`);
      const target = pathOf(storageKey);
      const directory = dirname(target);
      await mkdir(directory, { recursive: true, mode: 0o700 });
      const temporary = `${target}.${randomBytes(6).toString('hex')}.tmp`;
      const handle = await open(temporary, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL, 0o600);
      try {
        try {
          await handle.writeFile(bytes);
          await handle.sync();
        } finally {
          await handle.close();
        }
        await rename(temporary, target);
      } catch (error) {
        // A write cut short (ENOSPC on a full disk) leaves nothing beside the artifacts.
        await unlink(temporary).catch(() => undefined);
        throw error;
      }
      const dirHandle = await open(directory, constants.O_RDONLY);
      try {
        await dirHandle.sync();
      } finally {
        await dirHandle.close();
      }
      return { storageKey, sizeBytes: bytes.byteLength, sha256 };
    },

    read(storageKey: string): ReadStream {
      return createReadStream(pathOf(storageKey));
    },
  };
}
export type ArtifactStore = ReturnType<typeof createArtifactStore>;

/** A temporary an artifact write creates beside its target (`<artifact>.<12 hex>.tmp`). */
const TEMPORARY = /\.[0-9a-f]{12}\.tmp$/;

/**
 * Removes the temporaries that writes cut short left in the execution folders (a full disk, a
 * crash between create and rename), at executor start, before any write can be under way. A
 * temporary is never an artifact — an artifact exists only once renamed — so nothing is lost.
 * Answers how many were removed.
 */
export async function removeArtifactTemporaries(root: string): Promise<number> {
  let removed = 0;
  const folders = await readdir(root, { withFileTypes: true }).catch(() => []);
  for (const folder of folders) {
    if (!folder.isDirectory() || !/^exe_[0-9a-f]{32}$/.test(folder.name)) continue;
    const names = await readdir(join(root, folder.name)).catch((): string[] => []);
    for (const name of names.filter((entry) => TEMPORARY.test(entry))) {
      await unlink(join(root, folder.name, name)).then(
        () => (removed += 1),
        () => undefined,
      );
    }
  }
  return removed;
}
