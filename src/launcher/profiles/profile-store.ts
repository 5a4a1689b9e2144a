import { mkdir, readdir, readFile, rename, stat, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { packagePath } from '../../package-root.js';
import { findRawSecrets } from '../../config/secret-scan.js';
import { toFieldIssues } from '../../config/zod-issues.js';
import { errorCode, UserError } from '../../errors.js';
import { readFileIfPresent } from '../../storage/read-json-file.js';
import type { Profile } from './profile-schema.js';
import { DEFAULT_PROFILE, profileName, profilePaths, profilesDir, selectionFile, type ProfilePaths } from '../home/stack-home.js';

/** Largest profile source lexec reads; real ones are a few KiB. */
const MAX_PROFILE_BYTES = 256 * 1024;

/** The shipped example profiles (`profiles.example/<name>.toml`). */
export function exampleProfilePath(example: string): string {
  return packagePath('profiles.example', `${example}.toml`);
}

/**
 * Parses a profile's TOML text with zod. A syntax error names its line and column (smol-toml's
 * own message shows a code block of the document, which is never repeated); every schema problem
 * is reported with its path; values are never echoed.
 */
export async function parseProfile(text: string, sourcePath: string): Promise<Profile> {
  const { parse, TomlError } = await import('smol-toml');
  let document: unknown;
  try {
    document = parse(text);
  } catch (error) {
    if (!(error instanceof TomlError)) throw error;
    const reason = (error.message.split('\n')[0] ?? '').replace(/^Invalid TOML document:\s*/, '');
    throw new UserError('profile_invalid', `The profile ${sourcePath} is not valid TOML: line ${error.line}, column ${error.column} (${reason}).`, {
      nextStep: 'Fix the TOML syntax at that position (docs/stack.md "Profiles" describes every key), then run the command again.',
    });
  }
  // Loaded here, not at the top: `stack status` resolves the profile name through this module
  // and must not pay for zod and the schemas (tens of milliseconds) when it parses no profile.
  const { profileSchema } = await import('./profile-schema.js');
  const parsed = profileSchema.safeParse(document, { reportInput: true });
  const issues = [...(parsed.success ? [] : toFieldIssues(parsed.error.issues)), ...findRawSecrets(document)];
  if (!parsed.success || issues.length > 0) {
    throw new UserError('profile_invalid', `The profile ${sourcePath} has ${issues.length} problem${issues.length === 1 ? '' : 's'}.`, {
      nextStep: 'Fix each key listed (docs/stack.md "Profiles" describes every key), then run the command again.',
      issues,
    });
  }
  return parsed.data;
}

export interface LoadedProfile {
  readonly paths: ProfilePaths;
  readonly profile: Profile;
  /** The TOML as read: each generation keeps a copy of the one it was rendered from. */
  readonly text: string;
}

/** Reads and validates one profile; a missing profile is a user error naming how to get one. */
export async function loadProfile(home: string, name: string): Promise<LoadedProfile> {
  const paths = profilePaths(home, name);
  let text: string;
  try {
    const info = await stat(paths.source);
    if (!info.isFile()) throw profileUnreadable(paths, 'it is not a regular file');
    if (info.size > MAX_PROFILE_BYTES) {
      throw new UserError('profile_too_large', `The profile ${paths.source} is larger than ${MAX_PROFILE_BYTES} bytes.`, {
        nextStep: 'A profile is a few KiB of TOML; check that the right file is in place.',
      });
    }
    text = await readFile(paths.source, 'utf8');
  } catch (error) {
    if (error instanceof UserError) throw error;
    if (errorCode(error) === 'ENOENT') throw profileMissing(paths);
    // Permissions or I/O: the operator's to fix, not a bug of lexec.
    throw profileUnreadable(paths, errorCode(error) ?? 'I/O error');
  }
  return { paths, profile: await parseProfile(text, paths.source), text };
}

function profileUnreadable(paths: ProfilePaths, reason: string): UserError {
  return new UserError('profile_unreadable', `The profile ${paths.source} cannot be read (${reason}).`, {
    nextStep: 'Make profile.toml a regular file this user can read, then run the command again.',
  });
}

export function profileMissing(paths: ProfilePaths): UserError {
  return new UserError('profile_not_found', `There is no profile "${paths.name}" (expected ${paths.source}).`, {
    nextStep:
      paths.name === DEFAULT_PROFILE
        ? 'Run `lexec stack start` once: it creates the sandbox profile from the shipped example.'
        : `Copy one of the shipped examples (${packagePath('profiles.example')}) to ${paths.source}, edit it, then run the command again (\`lexec stack profiles\` lists the existing ones).`,
  });
}

/**
 * Creates a profile from a shipped example if it does not exist yet (the first `stack start` of
 * the default profile). Never overwrites: an existing profile is operator-owned.
 */
export async function createProfileFromExample(home: string, name: string, example: string): Promise<'created' | 'exists'> {
  const paths = profilePaths(home, name);
  await mkdir(paths.dir, { recursive: true, mode: 0o700 });
  try {
    // Written, not copied: a copy would take the shipped file's mode (read-only in a package
    // installed read-only), and the profile is the operator's to edit, and theirs alone.
    await writeFile(paths.source, await readFile(exampleProfilePath(example)), { flag: 'wx', mode: 0o600 });
    return 'created';
  } catch (error) {
    if (errorCode(error) === 'EEXIST') return 'exists';
    throw error;
  }
}

/** Names of the profiles under the home, sorted; a directory without profile.toml is not one. */
export async function listProfileNames(home: string): Promise<string[]> {
  let entries: string[];
  try {
    entries = await readdir(profilesDir(home));
  } catch (error) {
    if (errorCode(error) === 'ENOENT') return [];
    throw error;
  }
  const names: string[] = [];
  for (const entry of entries.sort()) {
    try {
      profileName(entry);
      if ((await stat(join(profilesDir(home), entry, 'profile.toml'))).isFile()) names.push(entry);
    } catch {
      // not a profile directory
    }
  }
  return names;
}

/** The saved selection, or null when none was saved (an invalid saved name is reported). */
export async function readSelection(home: string): Promise<string | null> {
  const text = await readFileIfPresent(selectionFile(home));
  if (text === null) return null;
  const name = text.trim();
  if (name === '') return null;
  try {
    return profileName(name);
  } catch {
    throw new UserError('profile_selection_invalid', `The saved profile selection in ${selectionFile(home)} is not a valid profile name.`, {
      nextStep: 'Select a profile again with `lexec stack select <name>`.',
    });
  }
}

/** Saves the selection atomically (temporary file + rename). */
export async function writeSelection(home: string, name: string): Promise<void> {
  const file = selectionFile(home);
  await mkdir(dirname(file), { recursive: true, mode: 0o700 });
  const temporary = `${file}.${process.pid}.tmp`;
  await writeFile(temporary, `${profileName(name)}\n`, { mode: 0o600 });
  await rename(temporary, file);
}

/** Which profile a command acts on: `--profile`, else the saved selection, else the default. */
export async function resolveProfileName(home: string, flag: string | undefined): Promise<{ name: string; source: 'flag' | 'selection' | 'default' }> {
  if (flag !== undefined) return { name: profileName(flag), source: 'flag' };
  const selected = await readSelection(home);
  if (selected !== null) return { name: selected, source: 'selection' };
  return { name: DEFAULT_PROFILE, source: 'default' };
}
