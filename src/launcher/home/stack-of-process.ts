import { access } from 'node:fs/promises';
import { workingDirectory, type HolderStack } from '../../process/port-probe.js';
import { profilePaths } from './stack-home.js';

/*
 * Which lexec stack a process belongs to, for naming the holder of a busy port: a stack's
 * supervisor and its children run in their profile's directory (`<home>/profiles/<name>`), a
 * managed Temporal server in its data directory (`…/state/temporal`). A directory is named only
 * when it is a profile's (it holds a profile source or an active pointer), never merely because
 * its path looks like one.
 */

const PROFILE_DIRECTORY = /^(.+)\/profiles\/([a-z0-9][a-z0-9_-]{0,39})(?:\/state\/temporal)?$/;

const exists = (path: string) =>
  access(path).then(
    () => true,
    () => false,
  );

export async function stackOfProcess(pid: number): Promise<HolderStack | null> {
  const directory = await workingDirectory(pid);
  const match = directory === null ? null : PROFILE_DIRECTORY.exec(directory);
  if (match?.[1] === undefined || match[2] === undefined) return null;
  const [home, profile] = [match[1], match[2]];
  const paths = profilePaths(home, profile);
  if (!(await exists(paths.source)) && !(await exists(paths.activeFile))) return null;
  return { profile, home };
}
