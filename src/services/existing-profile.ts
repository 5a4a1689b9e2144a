import { stat } from 'node:fs/promises';
import { profileMissing, resolveProfileName } from '../stack/profile-store.js';
import { lexecHome, profilePaths, type ProfilePaths } from '../stack/stack-home.js';
import type { ProfileRequest } from './stack-generations.js';

/**
 * The paths of the profile a read-only command acts on (`--profile`, else the selection, else the
 * default), which must exist: an unknown profile is `profile_not_found`, never an empty answer.
 */
export async function existingProfilePaths(request: ProfileRequest): Promise<ProfilePaths> {
  const home = lexecHome(request.env);
  const { name } = await resolveProfileName(home, request.profileFlag);
  const paths = profilePaths(home, name);
  const exists = await stat(paths.source).then(
    (stats) => stats.isFile(),
    () => false,
  );
  if (!exists) throw profileMissing(paths);
  return paths;
}
