import { errorCode, UserError } from '../errors.js';
import { privateFileIdentity, readPrivateFileWithIdentity, sameFileIdentity, type FileIdentity } from './private-file.js';

/** What became of a change to a followed file: taken up, or refused (the previous content stays in use). */
export type FollowedFileChange = { readonly outcome: 'followed' } | { readonly outcome: 'refused'; readonly code: string };

export interface FollowPrivateFileOptions {
  /** Whether a new content may replace the one in use (its kind, say); a refused one is reported and not used. */
  readonly accept?: (content: string) => boolean;
  /** Told once per version of the file that differs from the one in use. Never given the content. */
  readonly onChange?: (change: FollowedFileChange) => void;
}

/** A secret kept in a private file that may be replaced while the process runs. */
export interface FollowedPrivateFile {
  /** The content as of now: the file is read again only when it changed since it was last read. */
  current(): Promise<string>;
}

/**
 * Reads a private file now (its errors are the start's) and follows it afterwards: before each use
 * its identity (device, inode, size, modification and change times in ns; a symbolic link not followed) is
 * compared with that of the version in use, and a file that differs is read again
 * descriptor-safely. A replacement that cannot be read, is not private, or is refused by `accept`
 * leaves the previous content in use and is reported once, not at every use; the next change is
 * looked at again. An unchanged file costs one lstat.
 */
export async function followPrivateFile(path: string, what: string, options: FollowPrivateFileOptions = {}): Promise<FollowedPrivateFile> {
  let inUse = await readPrivateFileWithIdentity(path, what);
  // The version last refused (null: the file was missing), so it is reported and read once.
  let refused: FileIdentity | null | undefined;
  let checking: Promise<string> | null = null;

  const refuse = (identity: FileIdentity | null, code: string): string => {
    refused = identity;
    options.onChange?.({ outcome: 'refused', code });
    return inUse.content;
  };

  async function check(): Promise<string> {
    const seen = await privateFileIdentity(path).catch(() => null);
    if (seen !== null && sameFileIdentity(seen, inUse.identity)) return inUse.content;
    const refusedAlready = seen === null ? refused === null : refused != null && sameFileIdentity(seen, refused);
    if (refusedAlready) return inUse.content;
    if (seen === null) return refuse(null, 'secret_file_missing');
    let next;
    try {
      next = await readPrivateFileWithIdentity(path, what);
    } catch (error) {
      return refuse(seen, error instanceof UserError ? error.code : (errorCode(error) ?? 'secret_file_unreadable'));
    }
    if (options.accept !== undefined && !options.accept(next.content)) return refuse(next.identity, 'secret_file_wrong_kind');
    inUse = next;
    refused = undefined;
    options.onChange?.({ outcome: 'followed' });
    return inUse.content;
  }

  return {
    current() {
      // Concurrent uses share one check: a change is read, and reported, once.
      checking ??= check().finally(() => {
        checking = null;
      });
      return checking;
    },
  };
}
