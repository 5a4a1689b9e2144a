import { randomBytes } from 'node:crypto';
import { constants } from 'node:fs';
import { link, open, unlink } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { errorCode } from '../errors.js';

export type NewFileOutcome = 'created' | 'exists';

/**
 * Writes `content` to `path` only if nothing is there yet, atomically: the content goes to a
 * temporary file in the same directory (fsynced), which is then hard-linked to `path`. `link`
 * fails if `path` exists, so an existing file — a credential someone relies on, an edited
 * policy — is never replaced, even by a concurrent writer; and a crash never leaves a partial
 * file at `path`. The directory must exist (callers decide how private it must be).
 */
export async function writeNewFile(path: string, content: string | Uint8Array, mode: number): Promise<NewFileOutcome> {
  const dir = dirname(path);
  const temporary = join(dir, `.${basename(path)}.${randomBytes(6).toString('hex')}.tmp`);
  const handle = await open(temporary, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, mode);
  try {
    try {
      await handle.writeFile(content);
      await handle.sync();
    } finally {
      await handle.close();
    }
    await link(temporary, path);
  } catch (error) {
    if (errorCode(error) === 'EEXIST') return 'exists';
    throw error;
  } finally {
    await unlink(temporary).catch(() => undefined);
  }
  const directory = await open(dir, constants.O_RDONLY);
  try {
    await directory.sync();
  } finally {
    await directory.close();
  }
  return 'created';
}
