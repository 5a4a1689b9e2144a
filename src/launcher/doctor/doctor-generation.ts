import type { ExecutorConfig } from '../../executor/config/executor-config-schema.js';
import { parseExecutorConfig } from '../../executor/config/parse-executor-config.js';
import { UserError } from '../../errors.js';
import { failed, passed, warned, type DoctorCheck } from './doctor-report.js';
import { readActiveId, readGenerationFile, readManifest, tamperedFiles } from '../generations/generation-store.js';
import type { GenerationManifest } from '../generations/render-generation.js';
import type { ProfilePaths } from '../home/stack-home.js';

/** The active generation as the doctor found it; manifest and config are null when unusable. */
export interface ActiveGeneration {
  readonly check: DoctorCheck;
  readonly id: string | null;
  readonly manifest: GenerationManifest | null;
  readonly config: ExecutorConfig | null;
}

const RENDER_AGAIN = 'Generations are immutable: render again (`lexec stack render`) and activate the new one (`lexec stack stop` first); never edit rendered files.';

/**
 * `generation.active`: an active generation exists, its manifest is sound, its files match the
 * hashes the manifest recorded, and its executor.json passes this binary's schema.
 */
export async function inspectActiveGeneration(paths: ProfilePaths): Promise<ActiveGeneration> {
  let id: string | null;
  try {
    id = await readActiveId(paths);
  } catch (error) {
    if (!(error instanceof UserError)) throw error;
    return { check: failed('generation.active', error.message, error.nextStep), id: null, manifest: null, config: null };
  }
  if (id === null) {
    const check = warned(
      'generation.active',
      `profile "${paths.name}" has no active generation yet`,
      '`lexec stack render`, then `lexec stack activate --generation <id>` (the first `lexec stack start` does both).',
    );
    return { check, id, manifest: null, config: null };
  }
  let manifest: GenerationManifest | null;
  try {
    manifest = await readManifest(paths, id);
  } catch (error) {
    if (!(error instanceof UserError)) throw error;
    return { check: failed('generation.active', error.message, RENDER_AGAIN, error.issues), id, manifest: null, config: null };
  }
  if (manifest === null) {
    return { check: failed('generation.active', `the active generation ${id} is not in ${paths.generationsDir}`, RENDER_AGAIN), id, manifest: null, config: null };
  }
  const mismatched = await tamperedFiles(paths, manifest);
  if (mismatched.length > 0) {
    const check = failed('generation.active', `files of the active generation ${id} do not match its manifest: ${mismatched.join(', ')} (changed or missing)`, RENDER_AGAIN);
    return { check, id, manifest, config: null };
  }
  if (!manifest.files.some((file) => file.name === 'executor.json')) {
    // A ledger host's generation: no executor to configure.
    return { check: passed('generation.active', `generation ${id} is active (a ledger host: no executor); its ${manifest.files.length} files match the manifest hashes`), id, manifest, config: null };
  }
  let document: unknown = null;
  try {
    document = JSON.parse(await readGenerationFile(paths, id, 'executor.json'));
  } catch {
    // Reported below as not passing the schema.
  }
  const parsed = parseExecutorConfig(document);
  if (!parsed.ok) {
    const issues = parsed.issues.map((issue) => ({ path: `executor.json: ${issue.path}`, message: issue.message }));
    return { check: failed('generation.active', `executor.json of the active generation ${id} does not pass this binary's schema`, RENDER_AGAIN, issues), id, manifest, config: null };
  }
  const check = passed('generation.active', `generation ${id} is active; its ${manifest.files.length} files match the manifest hashes`);
  return { check, id, manifest, config: parsed.value };
}
