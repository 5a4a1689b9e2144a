import { UserError } from '../../errors.js';
import { readActiveId } from '../generations/generation-store.js';
import { listProfileNames, loadProfile, readSelection, resolveProfileName, writeSelection } from './profile-store.js';
import { lexecHome, profilePaths } from '../home/stack-home.js';
import { runningSupervisorPid } from '../home/stack-locks.js';

export interface ProfileSummary {
  readonly name: string;
  /** sandbox | live, or null when the profile does not parse. */
  readonly kind: string | null;
  readonly selected: boolean;
  readonly active_generation_id: string | null;
  readonly running: boolean;
  /** Why the profile cannot be used as it is (its code), or null. */
  readonly problem: string | null;
}

export interface ProfilesResult {
  readonly home: string;
  /** The profile commands act on without --profile, and where that choice comes from. */
  readonly effective: { readonly name: string; readonly source: 'flag' | 'selection' | 'default' };
  readonly profiles: readonly ProfileSummary[];
}

/** `stack profiles`: every profile under the home with its kind, selection, generation and state. */
export async function listStackProfiles({ env, profileFlag }: { env: NodeJS.ProcessEnv; profileFlag: string | undefined }): Promise<ProfilesResult> {
  const home = lexecHome(env);
  const effective = await resolveProfileName(home, profileFlag);
  const profiles: ProfileSummary[] = [];
  for (const name of await listProfileNames(home)) {
    const paths = profilePaths(home, name);
    let kind: string | null = null;
    let problem: string | null = null;
    try {
      kind = (await loadProfile(home, name)).profile.kind;
    } catch (error) {
      if (!(error instanceof UserError)) throw error;
      problem = error.code;
    }
    let active: string | null = null;
    try {
      active = await readActiveId(paths);
    } catch (error) {
      if (!(error instanceof UserError)) throw error;
      problem ??= error.code;
    }
    profiles.push({ name, kind, selected: name === effective.name, active_generation_id: active, running: (await runningSupervisorPid(paths)) !== null, problem });
  }
  return { home, effective, profiles };
}

export interface SelectResult {
  readonly selected: string;
  readonly previous: string | null;
}

/** `stack select <name>`: saves the selection; the profile must exist and parse. */
export async function selectStackProfile({ env, name }: { env: NodeJS.ProcessEnv; name: string }): Promise<SelectResult> {
  const home = lexecHome(env);
  const { paths } = await loadProfile(home, name);
  // A damaged saved selection is what selecting repairs; it must not block it.
  const previous = await readSelection(home).catch((error: unknown) => {
    if (error instanceof UserError) return null;
    throw error;
  });
  await writeSelection(home, paths.name);
  return { selected: paths.name, previous };
}
