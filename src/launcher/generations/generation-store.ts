import { createHash, randomBytes } from 'node:crypto';
import { constants } from 'node:fs';
import { mkdir, open, readdir, readFile, rename, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { toFieldIssues } from '../../config/zod-issues.js';
import { errorCode, UserError } from '../../errors.js';
import { readFileIfPresent, readJsonFile } from '../../storage/read-json-file.js';
import { generationIdSchema, manifestSchema, RUNTIME_FILES, type GenerationManifest, type RenderedGeneration } from './render-generation.js';
import type { ProfilePaths } from '../home/stack-home.js';

/*
 * Generations on disk: `generations/<id>/` holds the rendered runtime files and manifest.json,
 * written once into a temporary directory as read-only files, fsynced and renamed into place.
 * A generation is never rewritten: rendering the same inputs again finds it and reuses it. The
 * `active` file names the generation `stack start` runs; only activate and rollback change it.
 */

async function writeDurably(path: string, content: string, mode: number): Promise<void> {
  const handle = await open(path, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, mode);
  try {
    await handle.writeFile(content, 'utf8');
    await handle.sync();
  } finally {
    await handle.close();
  }
}

async function syncDirectory(dir: string): Promise<void> {
  const handle = await open(dir, constants.O_RDONLY);
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/** The copy of profile.toml a generation keeps. */
export const GENERATION_SOURCE_FILE = 'profile.toml';

export function generationDir(paths: ProfilePaths, id: string): string {
  return join(paths.generationsDir, generationIdSchema.parse(id));
}

/**
 * The runtime files of a generation whose content no longer matches the SHA-256 its manifest
 * recorded (edited, truncated, missing): empty for a sound generation.
 */
export async function tamperedFiles(paths: ProfilePaths, manifest: GenerationManifest): Promise<string[]> {
  const dir = generationDir(paths, manifest.generation_id);
  const mismatched: string[] = [];
  for (const file of manifest.files) {
    const content = await readFile(join(dir, file.name)).catch(() => null);
    if (content === null || createHash('sha256').update(content).digest('hex') !== file.sha256) mismatched.push(file.name);
  }
  return mismatched;
}

/** A generation that is present and sound: its manifest reads and every file matches it; else `generation_damaged`. */
export async function verifiedManifest(paths: ProfilePaths, id: string): Promise<GenerationManifest | null> {
  const manifest = await readManifest(paths, id);
  if (manifest === null) return null;
  const tampered = await tamperedFiles(paths, manifest);
  if (tampered.length > 0) {
    throw new UserError('generation_damaged', `Generation ${id} of profile "${paths.name}" is damaged: ${tampered.join(', ')} no longer match${tampered.length === 1 ? 'es' : ''} its manifest.`, {
      nextStep: 'Render the profile again (`lexec stack render` re-creates a damaged generation it derives the same id for), or activate another generation.',
      issues: tampered.map((name) => ({ path: name, message: 'content differs from the SHA-256 in manifest.json' })),
    });
  }
  return manifest;
}

/** Writes a rendered generation unless it exists; `exists` means the same id was rendered before. */
export async function storeGeneration(paths: ProfilePaths, rendered: RenderedGeneration, sourceToml?: string): Promise<'created' | 'exists' | 'repaired'> {
  const target = generationDir(paths, rendered.id);
  // A generation of this id that is damaged or tampered with is set aside and written again:
  // the id is derived from the inputs, so what belongs in it is known exactly.
  let repaired = false;
  try {
    if ((await verifiedManifest(paths, rendered.id)) !== null) return 'exists';
  } catch (error) {
    if (!(error instanceof UserError) || error.code !== 'generation_damaged') throw error;
    await rename(target, join(paths.generationsDir, `.${rendered.id}.damaged.${randomBytes(6).toString('hex')}`));
    repaired = true;
  }
  await mkdir(paths.generationsDir, { recursive: true, mode: 0o700 });
  const temporary = join(paths.generationsDir, `.${rendered.id}.${randomBytes(6).toString('hex')}.tmp`);
  await mkdir(temporary, { mode: 0o700 });
  try {
    for (const name of RUNTIME_FILES) {
      const text = rendered.files[name];
      // A role's generation holds only its components' files (a ledger host has no executor.json).
      if (text !== undefined) await writeDurably(join(temporary, name), text, 0o400);
    }
    await writeDurably(join(temporary, 'manifest.json'), `${JSON.stringify(rendered.manifest, null, 2)}\n`, 0o400);
    // The operator's TOML it was rendered from, so a rollback never depends on a saved copy
    // (`cp generations/<id>/profile.toml profile.toml`). Not part of the id or the manifest.
    if (sourceToml !== undefined) await writeDurably(join(temporary, GENERATION_SOURCE_FILE), sourceToml, 0o400);
    await syncDirectory(temporary);
    await rename(temporary, target);
  } catch (error) {
    await rm(temporary, { recursive: true, force: true });
    // Another render of the same inputs won the rename: the generation exists, which is the goal.
    if (errorCode(error) === 'ENOTEMPTY' || errorCode(error) === 'EEXIST') return 'exists';
    throw error;
  }
  await syncDirectory(paths.generationsDir);
  return repaired ? 'repaired' : 'created';
}

/** A generation's manifest, or null when there is no such generation. */
export async function readManifest(paths: ProfilePaths, id: string): Promise<GenerationManifest | null> {
  const file = await readJsonFile(join(generationDir(paths, id), 'manifest.json'));
  if (file.kind === 'missing') return null;
  if (file.kind === 'not_json') throw damagedGeneration(paths, id, []);
  const parsed = manifestSchema.safeParse(file.document, { reportInput: true });
  if (!parsed.success || parsed.data.generation_id !== id) throw damagedGeneration(paths, id, parsed.success ? [] : toFieldIssues(parsed.error.issues));
  return parsed.data;
}

function damagedGeneration(paths: ProfilePaths, id: string, issues: ReturnType<typeof toFieldIssues>): UserError {
  return new UserError('generation_damaged', `The manifest of generation ${id} in ${paths.generationsDir} is damaged.`, {
    nextStep: 'Do not start from it: render the profile again (a new generation) and activate that one.',
    issues,
  });
}

/** A retained generation that cannot be used, and why. */
export interface DamagedGeneration {
  readonly generation_id: string;
  readonly problem: string;
}

/**
 * Every retained generation, sound ones newest first, and the damaged ones (an unreadable
 * manifest, or files that no longer match it) listed apart instead of failing the whole list.
 */
export async function surveyGenerations(paths: ProfilePaths): Promise<{ sound: GenerationManifest[]; damaged: DamagedGeneration[] }> {
  let entries: string[];
  try {
    entries = await readdir(paths.generationsDir);
  } catch (error) {
    if (errorCode(error) === 'ENOENT') return { sound: [], damaged: [] };
    throw error;
  }
  const sound: GenerationManifest[] = [];
  const damaged: DamagedGeneration[] = [];
  for (const entry of entries.sort()) {
    if (!generationIdSchema.safeParse(entry).success) continue;
    try {
      const manifest = await verifiedManifest(paths, entry);
      if (manifest !== null) sound.push(manifest);
    } catch (error) {
      if (!(error instanceof UserError) || error.code !== 'generation_damaged') throw error;
      damaged.push({ generation_id: entry, problem: error.issues.length > 0 ? error.issues.map((issue) => `${issue.path}: ${issue.message}`).join('; ') : 'manifest.json is unreadable or does not match its id' });
    }
  }
  sound.sort((a, b) => b.rendered_at.localeCompare(a.rendered_at) || a.generation_id.localeCompare(b.generation_id));
  return { sound, damaged };
}

/** The active generation id, or null before the first activation. */
export async function readActiveId(paths: ProfilePaths): Promise<string | null> {
  const text = await readFileIfPresent(paths.activeFile);
  if (text === null) return null;
  const parsed = generationIdSchema.safeParse(text.trim());
  if (!parsed.success) {
    throw new UserError('active_generation_invalid', `The active generation pointer ${paths.activeFile} is damaged.`, {
      nextStep: 'List the generations with `lexec stack generations`, then `lexec stack activate --generation <id>`.',
    });
  }
  return parsed.data;
}

/** Points `active` at a retained generation: temporary file, fsync, rename, fsync of the directory. */
export async function writeActiveId(paths: ProfilePaths, id: string): Promise<void> {
  const temporary = `${paths.activeFile}.${randomBytes(6).toString('hex')}.tmp`;
  await writeDurably(temporary, `${generationIdSchema.parse(id)}\n`, 0o600);
  await rename(temporary, paths.activeFile);
  await syncDirectory(paths.dir);
}

/**
 * Withdraws the active pointer (the profile has no active generation again): only for an
 * activation a failed first start made, so the next start renders the profile as it is then.
 */
export async function clearActiveId(paths: ProfilePaths): Promise<void> {
  await rm(paths.activeFile, { force: true });
  await syncDirectory(paths.dir);
}

/** The file naming the generation that was active before the current one (kept by every prune). */
function previousFile(paths: ProfilePaths): string {
  return join(paths.dir, 'previous');
}

/** The generation active before the current one, when recorded and well formed; else null. */
export async function readPreviousId(paths: ProfilePaths): Promise<string | null> {
  const text = await readFileIfPresent(previousFile(paths)).catch(() => null);
  const parsed = generationIdSchema.safeParse(text?.trim());
  return parsed.success ? parsed.data : null;
}

/** Records the generation that was active before an activation (temporary file, rename). */
export async function writePreviousId(paths: ProfilePaths, id: string): Promise<void> {
  const temporary = `${previousFile(paths)}.${randomBytes(6).toString('hex')}.tmp`;
  await writeDurably(temporary, `${generationIdSchema.parse(id)}\n`, 0o600);
  await rename(temporary, previousFile(paths));
}

/** Removes one retained generation directory (its files are read-only: the directory is what goes). */
export async function removeGeneration(paths: ProfilePaths, id: string): Promise<void> {
  await rm(generationDir(paths, id), { recursive: true, force: true });
}

/** The content of one rendered runtime file. */
export async function readGenerationFile(paths: ProfilePaths, id: string, name: (typeof RUNTIME_FILES)[number]): Promise<string> {
  return readFile(join(generationDir(paths, id), name), 'utf8');
}
