import { constants, lstatSync, readdirSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { join, relative, sep } from 'node:path';
import type { ExecutorConfig } from '../../executor/config/executor-config-schema.js';
import { errorCode } from '../../errors.js';
import { octalMode, OPEN_TO_OTHERS, SQLITE_COMPANION_SUFFIXES } from '../../storage/private-state.js';
import type { ProfilePaths } from '../home/stack-home.js';

/*
 * The `state.permissions` check's observation and its one repair (docs/stack.md "Doctor"): which
 * of a profile's state files and directories group or others may read, write or enter, and —
 * only when the operator asks (`stack doctor --fix-permissions`) — removing those bits. Both act
 * on lexec's own state alone: the profile's `state/` and `logs/` trees and the paths its
 * configuration names, never the credential directory (its own check; a loose credential needs a
 * human to decide whether to rotate it), never a symbolic link (not followed), never content.
 */

export interface StateEntryProblem {
  readonly path: string;
  readonly type: 'file' | 'directory';
  /** Permission bits, e.g. 0o644. */
  readonly mode: number;
  /** `open_to_others`: group or other bits set; `not_owned`: another user's, which lexec cannot change. */
  readonly problem: 'open_to_others' | 'not_owned';
}

export interface StatePermissions {
  /** The roots that exist (a profile before its first start has none). */
  readonly roots: readonly string[];
  readonly directories: number;
  readonly files: number;
  readonly problems: readonly StateEntryProblem[];
}

/** One repair, as the report lists it. */
export interface PermissionFix {
  readonly path: string;
  readonly previous_mode: string;
  readonly mode: string;
}

export interface StateScope {
  /** Trees and single paths to inspect, deduplicated (a root inside another is covered by it). */
  readonly roots: readonly string[];
  /** Trees left to other checks (the credential state). */
  readonly excluded: readonly string[];
}

const inside = (path: string, root: string): boolean => {
  const rel = relative(root, path);
  return rel === '' || (!rel.startsWith(`..${sep}`) && rel !== '..' && !rel.startsWith(sep));
};

/** The profile's state: `state/`, `logs/`, and every state path the configuration names (normally inside them). */
export function stateScope(paths: ProfilePaths, config: ExecutorConfig | null): StateScope {
  const databases = [paths.ledgerDatabase, ...(config === null ? [] : [config.storage.database_path])];
  const engine = config?.workflow_engine;
  const candidates = [
    paths.stateDir,
    paths.logsDir,
    ...databases.flatMap((database) => [database, ...SQLITE_COMPANION_SUFFIXES.map((suffix) => `${database}${suffix}`)]),
    ...(config === null ? [] : [config.storage.artifact_root, config.storage.catalog_path]),
    ...(engine?.mode === 'managed_local' ? [engine.data_dir, ...(engine.log_dir === undefined ? [] : [engine.log_dir])] : []),
  ];
  const roots: string[] = [];
  for (const candidate of candidates) {
    if (!roots.some((root) => inside(candidate, root))) roots.push(candidate);
  }
  const excluded = [paths.credentialsDir, ...(config?.credentials.mode === 'managed' ? [config.credentials.state_dir] : [])];
  return { roots, excluded };
}

function currentUid(): number | null {
  return typeof process.getuid === 'function' ? process.getuid() : null;
}

function lstatIfPresent(path: string) {
  try {
    return lstatSync(path);
  } catch (error) {
    // Not there yet, or gone between readdir and lstat (a running executor's temporary file).
    if (errorCode(error) === 'ENOENT' || errorCode(error) === 'ENOTDIR') return null;
    throw error;
  }
}

/**
 * Walks the scope with lstat (links are not followed), collecting entries open to others or
 * owned by someone else. Synchronous on purpose: `stack start` runs it over every artifact, and
 * one thread-pool round trip per entry made 20,000 images cost seconds; the calls are lstat and
 * readdir of local directories, and the doctor's process does nothing else meanwhile.
 */
export function inspectStatePermissions(scope: StateScope): StatePermissions {
  const uid = currentUid();
  const problems: StateEntryProblem[] = [];
  const roots: string[] = [];
  let directories = 0;
  let files = 0;
  const visit = (path: string): void => {
    if (scope.excluded.some((excluded) => inside(path, excluded))) return;
    const info = lstatIfPresent(path);
    if (info === null || (!info.isDirectory() && !info.isFile())) return;
    const type = info.isDirectory() ? 'directory' : 'file';
    const mode = info.mode & 0o777;
    if (uid !== null && info.uid !== uid) problems.push({ path, type, mode, problem: 'not_owned' });
    else if ((mode & OPEN_TO_OTHERS) !== 0) problems.push({ path, type, mode, problem: 'open_to_others' });
    if (type === 'file') {
      files += 1;
      return;
    }
    directories += 1;
    // A directory this user cannot list is already reported (not owned); its content is not reachable.
    let entries: string[];
    try {
      entries = readdirSync(path);
    } catch {
      entries = [];
    }
    for (const entry of entries.sort()) visit(join(path, entry));
  };
  for (const root of scope.roots) {
    if (lstatIfPresent(root) === null) continue;
    roots.push(root);
    visit(root);
  }
  return { roots, directories, files, problems };
}

/**
 * Removes group and other bits from each entry open to others. Each is opened without following
 * a link and changed through its descriptor, after checking it is still this user's file or
 * directory, so a path swapped for a link since it was inspected is never followed. An entry
 * that cannot be changed is left (the check, run again, still reports it).
 */
export async function tightenStatePermissions(problems: readonly StateEntryProblem[]): Promise<PermissionFix[]> {
  const uid = currentUid();
  const fixes: PermissionFix[] = [];
  for (const problem of problems) {
    if (problem.problem !== 'open_to_others') continue;
    const flags = constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK | (problem.type === 'directory' ? constants.O_DIRECTORY : 0);
    let handle;
    try {
      handle = await open(problem.path, flags);
    } catch {
      continue;
    }
    try {
      const info = await handle.stat();
      if ((problem.type === 'directory' ? !info.isDirectory() : !info.isFile()) || (uid !== null && info.uid !== uid)) continue;
      const mode = info.mode & 0o777;
      if ((mode & OPEN_TO_OTHERS) === 0) continue;
      await handle.chmod(mode & ~OPEN_TO_OTHERS);
      fixes.push({ path: problem.path, previous_mode: octalMode(mode), mode: octalMode(mode & ~OPEN_TO_OTHERS) });
    } catch {
      // Left as it was; reported again.
    } finally {
      await handle.close();
    }
  }
  return fixes;
}
