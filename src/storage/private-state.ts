import { chmodSync, closeSync, constants, fchmodSync, fstatSync, mkdirSync, openSync, statSync } from 'node:fs';
import { dirname } from 'node:path';

/*
 * State only its owner can read (docs/decisions.md "Private state"). A database holds capability
 * digests, authorizations and settlements, or prompts and receipts; images are the results of
 * prompts; logs and journals name them. Every state file lexec writes is created 0600 and every
 * directory 0700 by an explicit mode — a umask can only remove bits, so no umask makes them
 * wider — and the files a service owns are tightened when it opens them, for state an older
 * release created 0644.
 */

/** Group and other permission bits: private state has none of them. */
export const OPEN_TO_OTHERS = 0o077;

/** A file whose mode was tightened: its path and the permission bits it had (never its content). */
export interface TightenedFile {
  readonly path: string;
  readonly previousMode: number;
}

/**
 * The umask of lexec's long-running processes (the servers and the supervisor): whatever they or
 * their children create without an explicit mode — the managed Temporal server's `temporal.db`,
 * a library's temporary file — is private. Children inherit it.
 */
export const PRIVATE_UMASK = 0o077;

export function restrictProcessUmask(): void {
  process.umask(PRIVATE_UMASK);
}

/**
 * Removes group and other bits from the file open as `fd`. Returns the permission bits it had
 * when it changed them, null when there was nothing to change or it is not this user's to change
 * (EPERM: the doctor reports a file owned by someone else).
 */
export function tightenOpenFile(fd: number): number | null {
  const mode = fstatSync(fd).mode & 0o777;
  if ((mode & OPEN_TO_OTHERS) === 0) return null;
  try {
    fchmodSync(fd, mode & ~OPEN_TO_OTHERS);
  } catch {
    return null;
  }
  return mode;
}

/** The files SQLite keeps beside a database. */
export const SQLITE_COMPANION_SUFFIXES = ['-wal', '-shm', '-journal'] as const;

/**
 * Prepares a SQLite database's files before SQLite opens them. Its directory is created 0700
 * (an existing one is left as it is: it may be the operator's). A missing database file is
 * created empty, 0600: SQLite would create it 0644 minus the umask, and gives its `-wal`, `-shm`
 * and `-journal` the database file's own mode, so a private database keeps private journals. An
 * existing database and its journals are tightened to no group or other bits.
 *
 * Best effort by design: a file that cannot be opened or changed here is left for SQLite, whose
 * own error (or read-only open) is the one the operator should see. Returns what was tightened.
 */
export function preparePrivateDatabase(path: string): TightenedFile[] {
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  try {
    // Only a file that did not exist is opened (and closed) here: closing a descriptor of a
    // database this process already has open would drop SQLite's POSIX locks on it.
    closeSync(openSync(path, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL, 0o600));
  } catch {
    // It exists (or cannot be created: SQLite will say why).
  }
  const tightened: TightenedFile[] = [];
  for (const file of [path, ...SQLITE_COMPANION_SUFFIXES.map((suffix) => `${path}${suffix}`)]) {
    try {
      const mode = statSync(file).mode & 0o777;
      if ((mode & OPEN_TO_OTHERS) === 0) continue;
      chmodSync(file, mode & ~OPEN_TO_OTHERS);
      tightened.push({ path: file, previousMode: mode });
    } catch {
      // Missing, or not this user's to change (the doctor reports a file owned by someone else).
    }
  }
  return tightened;
}

/** "0644": permission bits as an operator writes them for chmod. */
export function octalMode(mode: number): string {
  return `0${(mode & 0o777).toString(8).padStart(3, '0')}`;
}

/** The log event a service writes for each file it tightened: the path and modes, nothing of the content. */
export function tightenedEvent(file: TightenedFile): { event: 'state_file_tightened'; path: string; previous_mode: string; mode: string } {
  return { event: 'state_file_tightened', path: file.path, previous_mode: octalMode(file.previousMode), mode: octalMode(file.previousMode & ~OPEN_TO_OTHERS) };
}
