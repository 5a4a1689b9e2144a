import { constants } from 'node:fs';
import { chmod, lstat, mkdir, open, rename, unlink } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { errorCode, UserError } from '../errors.js';

/** Largest secret file lexec reads. */
const MAX_SECRET_BYTES = 4096;

function currentUid(): number | null {
  return typeof process.getuid === 'function' ? process.getuid() : null;
}

/**
 * Makes `dir` (and parents) exist. The directory itself must end up private: 0700 and owned by
 * this user. A directory that already exists with looser permissions is refused, not silently
 * fixed — someone else may already have read what was in it.
 */
export async function ensurePrivateDirectory(dir: string): Promise<void> {
  await mkdir(dir, { recursive: true, mode: 0o700 });
  // lstat: a symbolic link to some other directory is not this private directory.
  const info = await lstat(dir);
  const uid = currentUid();
  if (!info.isDirectory() || (uid !== null && info.uid !== uid) || (info.mode & 0o077) !== 0) {
    throw new UserError('credential_directory_not_private', `The credential directory ${dir} is not private.`, {
      nextStep: `Make it a directory owned by this user with mode 0700 (chmod 700 ${dir}), after checking nobody else read it.`,
    });
  }
}

/**
 * Writes a secret to `path` atomically with mode 0600 inside a private (0700) directory: a
 * temporary file opened exclusively without following links, fsync, rename, fsync of the
 * directory. A reader never sees a partial secret.
 */
export async function writePrivateFile(path: string, content: string): Promise<void> {
  const dir = dirname(path);
  await ensurePrivateDirectory(dir);
  const temporary = join(dir, `.${basename(path)}.${randomBytes(6).toString('hex')}.tmp`);
  const handle = await open(temporary, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600);
  try {
    await handle.writeFile(content, 'utf8');
    await handle.sync();
  } finally {
    await handle.close();
  }
  try {
    await chmod(temporary, 0o600);
    await rename(temporary, path);
  } catch (error) {
    await unlink(temporary).catch(() => undefined);
    throw error;
  }
  const directory = await open(dir, constants.O_RDONLY);
  try {
    await directory.sync();
  } finally {
    await directory.close();
  }
}

/**
 * Moves a private file written with `writePrivateFile` over `to` in the same directory, atomically
 * (rename, then fsync of the directory): a reader sees the old secret or the new one, never
 * neither. Used to put a rotated capability in place once the server accepts it.
 */
export async function promotePrivateFile(from: string, to: string): Promise<void> {
  if (dirname(from) !== dirname(to)) throw new Error('promotePrivateFile moves within one directory only');
  await rename(from, to);
  const directory = await open(dirname(to), constants.O_RDONLY);
  try {
    await directory.sync();
  } finally {
    await directory.close();
  }
}

/**
 * What tells one version of a file from another without reading it: a replaced or rewritten file
 * differs in at least one. The change time is there too, so a file whose mode was fixed (chmod
 * changes no content and no mtime) is looked at again.
 */
export interface FileIdentity {
  readonly dev: bigint;
  readonly ino: bigint;
  readonly size: bigint;
  readonly mtimeNs: bigint;
  readonly ctimeNs: bigint;
}

export function sameFileIdentity(a: FileIdentity, b: FileIdentity): boolean {
  return a.dev === b.dev && a.ino === b.ino && a.size === b.size && a.mtimeNs === b.mtimeNs && a.ctimeNs === b.ctimeNs;
}

function identityOf(info: FileIdentity): FileIdentity {
  return { dev: info.dev, ino: info.ino, size: info.size, mtimeNs: info.mtimeNs, ctimeNs: info.ctimeNs };
}

/** The identity of the file at `path` itself (a symbolic link is not followed), or null when there is none. */
export async function privateFileIdentity(path: string): Promise<FileIdentity | null> {
  try {
    return identityOf(await lstat(path, { bigint: true }));
  } catch (error) {
    if (errorCode(error) === 'ENOENT') return null;
    throw error;
  }
}

/**
 * Reads a secret descriptor-safely: opens without following a symbolic link, then checks on the
 * open descriptor that it is a regular file owned by this user and readable by nobody else.
 * Returns the content with surrounding whitespace removed. Errors never include the content.
 */
export async function readPrivateFile(path: string, what: string): Promise<string> {
  return (await readPrivateFileWithIdentity(path, what)).content;
}

/**
 * readPrivateFile, with the identity of the very file read (taken from its open descriptor): a
 * caller that compares it with a later `privateFileIdentity` learns whether the file changed
 * since, with no window between the read and the identity.
 */
export async function readPrivateFileWithIdentity(path: string, what: string): Promise<{ content: string; identity: FileIdentity }> {
  let handle;
  try {
    handle = await open(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (error) {
    const code = errorCode(error);
    if (code === 'ENOENT') {
      throw new UserError('secret_file_missing', `The ${what} file ${path} does not exist.`, { nextStep: 'Create it, or point to the right file.' });
    }
    if (code === 'ELOOP') {
      throw new UserError('secret_file_not_private', `The ${what} file ${path} is a symbolic link; secrets are read only from regular files.`, {
        nextStep: 'Point to the file itself.',
      });
    }
    throw new UserError('secret_file_unreadable', `The ${what} file ${path} cannot be read (${code ?? 'error'}).`, {
      nextStep: 'Check its permissions and those of its directories.',
    });
  }
  try {
    const info = await handle.stat({ bigint: true });
    const uid = currentUid();
    if (!info.isFile() || (uid !== null && info.uid !== BigInt(uid)) || (info.mode & 0o077n) !== 0n) {
      throw new UserError('secret_file_not_private', `The ${what} file ${path} is not private.`, {
        nextStep: 'It must be a regular file owned by this user with mode 0600 (chmod 600).',
      });
    }
    if (info.size > BigInt(MAX_SECRET_BYTES)) {
      throw new UserError('secret_file_unreadable', `The ${what} file ${path} is too large to be a credential.`, {
        nextStep: 'Point to the credential file itself.',
      });
    }
    return { content: (await handle.readFile('utf8')).trim(), identity: identityOf(info) };
  } finally {
    await handle.close();
  }
}

/** `readPrivateFile`, or null when there is no file at `path`; any other problem still throws. */
export async function readPrivateFileIfPresent(path: string, what: string): Promise<string | null> {
  try {
    return await readPrivateFile(path, what);
  } catch (error) {
    if (error instanceof UserError && error.code === 'secret_file_missing') return null;
    throw error;
  }
}
