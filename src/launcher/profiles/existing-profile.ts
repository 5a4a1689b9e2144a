import { stat } from 'node:fs/promises';
import { profileMissing, resolveProfileName } from './profile-store.js';
import { lexecHome, profilePaths, type ProfilePaths } from '../home/stack-home.js';

/*
 * Which profile a command acts on (`--profile`, else the selection, else the default), checked
 * to exist: a mistyped `--profile sanbox` is `profile_not_found` (exit 1), never an empty answer
 * such as "nothing to stop" while the real stack keeps running.
 */

/** A launcher command's profile choice: `--profile` (or none) and the environment it reads `$LEXEC_HOME` from. */
export interface ProfileRequest {
  readonly env: NodeJS.ProcessEnv;
  readonly profileFlag: string | undefined;
}

const isFile = (path: string) =>
  stat(path).then(
    (stats) => stats.isFile(),
    () => false,
  );
const isDirectory = (path: string) =>
  stat(path).then(
    (stats) => stats.isDirectory(),
    () => false,
  );

/** The profile's paths; its `profile.toml` must exist. */
export async function existingProfilePaths(request: ProfileRequest): Promise<ProfilePaths> {
  const home = lexecHome(request.env);
  const { name } = await resolveProfileName(home, request.profileFlag);
  const paths = profilePaths(home, name);
  if (!(await isFile(paths.source))) throw profileMissing(paths);
  return paths;
}

/**
 * The profile's paths for a command that must still reach a stack whose `profile.toml` was
 * removed (`stop`, `status`, `generations`): the profile is known if its TOML, its active pointer
 * or its state directory exists.
 */
export async function knownProfilePaths(request: ProfileRequest): Promise<ProfilePaths> {
  const home = lexecHome(request.env);
  const { name } = await resolveProfileName(home, request.profileFlag);
  const paths = profilePaths(home, name);
  const known = (await isFile(paths.source)) || (await isFile(paths.activeFile)) || (await isDirectory(paths.stateDir));
  if (!known) throw profileMissing(paths);
  return paths;
}
