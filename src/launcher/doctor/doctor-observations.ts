import { lstat, readdir, readFile, statfs } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { errorCode } from '../../errors.js';
import type { PrivateEntryProblem, SecretFileState } from './doctor-checks.js';
import type { ProfilePaths } from '../home/stack-home.js';
import { readStateLeniently } from '../supervisor/stack-processes.js';

/*
 * What the doctor looks at, read-only: metadata (lstat, statfs), hashes of rendered files, small
 * state files, /proc. Nothing here writes, creates, locks or connects, and no secret's content
 * is read — only whether its file exists and is private.
 */

function currentUid(): number | null {
  return typeof process.getuid === 'function' ? process.getuid() : null;
}

/** Walks a private directory tree: every directory 0700-or-stricter, every file 0600-or-stricter, all owned, no links. */
export async function inspectPrivateTree(dir: string): Promise<{ exists: boolean; files: number; problems: PrivateEntryProblem[] }> {
  const uid = currentUid();
  const problems: PrivateEntryProblem[] = [];
  let files = 0;
  const visit = async (path: string): Promise<void> => {
    const info = await lstat(path).catch((error: unknown) => {
      // A running executor's temporary file can vanish between readdir and lstat.
      if (errorCode(error) === 'ENOENT') return null;
      throw error;
    });
    if (info === null) return;
    const type = info.isDirectory() ? 'directory' : info.isFile() ? 'file' : 'other';
    const mode = info.mode & 0o777;
    if (info.isSymbolicLink()) problems.push({ path, type, mode, problem: 'symbolic_link' });
    else if (type === 'other') problems.push({ path, type, mode, problem: 'not_regular' });
    else if (uid !== null && info.uid !== uid) problems.push({ path, type, mode, problem: 'not_owned' });
    else if ((mode & 0o077) !== 0) problems.push({ path, type, mode, problem: 'readable_by_others' });
    if (type === 'file') files += 1;
    if (type !== 'directory') return;
    const entries = await readdir(path).catch(() => null);
    if (entries === null) {
      problems.push({ path, type, mode, problem: 'not_readable' });
      return;
    }
    for (const entry of entries.sort()) await visit(join(path, entry));
  };
  try {
    await lstat(dir);
  } catch (error) {
    if (errorCode(error) === 'ENOENT') return { exists: false, files: 0, problems: [] };
    throw error;
  }
  await visit(dir);
  return { exists: true, files, problems };
}

/** Whether a secret file exists and is private, judged from lstat alone: its content is never read. */
export async function inspectSecretFile(path: string): Promise<SecretFileState> {
  let info;
  try {
    info = await lstat(path);
  } catch (error) {
    if (errorCode(error) === 'ENOENT' || errorCode(error) === 'ENOTDIR') return 'missing';
    throw error;
  }
  const uid = currentUid();
  if (info.isSymbolicLink()) return 'symbolic_link';
  if (!info.isFile()) return 'not_regular';
  if (uid !== null && info.uid !== uid) return 'not_owned';
  if ((info.mode & 0o077) !== 0) return 'readable_by_others';
  return 'present';
}

/** Bytes available to this user on the filesystem that holds `path` (or its nearest existing parent). */
export async function availableDiskBytes(path: string): Promise<bigint | null> {
  let current = path;
  for (;;) {
    try {
      const info = await statfs(current, { bigint: true });
      return info.bavail * info.bsize;
    } catch (error) {
      const parent = dirname(current);
      if (errorCode(error) !== 'ENOENT' || parent === current) return null;
      current = parent;
    }
  }
}

/**
 * Component pids the running supervisor published in `state/supervisor.json` (read as `stack
 * status` reads it); empty when it published none yet or the file is damaged: the port check
 * then falls back to process ancestry.
 */
export async function publishedComponentPids(paths: ProfilePaths): Promise<Map<string, number>> {
  const state = await readStateLeniently(paths);
  return new Map(Object.entries(state?.components ?? {}).flatMap(([name, component]) => (component.pid === null ? [] : [[name, component.pid] as const])));
}

/** Whether `pid` is `ancestor` or one of its descendants (Linux /proc); false when it cannot be told. */
export async function descendsFrom(pid: number, ancestor: number): Promise<boolean> {
  let current = pid;
  for (let depth = 0; depth < 64 && current > 1; depth += 1) {
    if (current === ancestor) return true;
    const text = await readFile(`/proc/${current}/stat`, 'utf8').catch(() => null);
    // pid (comm) state ppid …; comm may hold spaces or parentheses, so read after the last ')'.
    const ppid = text === null ? Number.NaN : Number(text.slice(text.lastIndexOf(')') + 2).split(' ')[1]);
    if (!Number.isInteger(ppid)) return false;
    current = ppid;
  }
  return false;
}

/** The pid recorded in a lock file, alive or not; null when there is no lock file. */
export async function lockFilePid(path: string): Promise<number | null> {
  const text = await readFile(path, 'utf8').catch(() => null);
  if (text === null) return null;
  const pid = Number.parseInt(text, 10);
  return Number.isInteger(pid) && pid > 0 ? pid : null;
}
