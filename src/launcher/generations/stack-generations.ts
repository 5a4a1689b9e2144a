import { createTwoFilesPatch } from 'diff';
import { stat } from 'node:fs/promises';
import { readBuildInfo } from '../../build-info.js';
import { UsageError, UserError } from '../../errors.js';
import {
  readActiveId,
  readGenerationFile,
  readManifest,
  readPreviousId,
  removeGeneration,
  storeGeneration,
  surveyGenerations,
  verifiedManifest,
  writeActiveId,
  writePreviousId,
  type DamagedGeneration,
} from './generation-store.js';
import { loadProfile, profileMissing, resolveProfileName } from '../profiles/profile-store.js';
import { compareGenerations, generationIdSchema, renderGeneration, RUNTIME_FILES, type GenerationChange, type GenerationManifest, type RuntimeFile } from './render-generation.js';
import { lexecHome, profilePaths, type ProfilePaths } from '../home/stack-home.js';
import { acquireLauncherLock, assertStackStopped } from '../home/stack-locks.js';
import { knownProfilePaths, type ProfileRequest } from '../profiles/existing-profile.js';

export interface RenderResult extends GenerationChange {
  readonly profile: string;
  readonly generation_id: string;
  /**
   * `created`: a new generation directory; `exists`: the same inputs were rendered before;
   * `repaired`: a damaged or tampered generation of this id was set aside and written again.
   */
  readonly outcome: 'created' | 'exists' | 'repaired';
  readonly active_generation_id: string | null;
  readonly is_active: boolean;
  /**
   * How `[ledger.default_policy]` differs from the active generation's, field by field (amounts
   * as decimal strings); empty when it does not. Applies at the next ledger start to every agent
   * that follows the default (never given its own policy with `ledger policy set`).
   */
  readonly default_policy_changes: readonly DefaultPolicyChange[];
  /** A unified diff of the rendered runtime files against the active generation's ('' when none differ or none is active). */
  readonly diff: string;
}

export interface DefaultPolicyChange {
  readonly field: 'per_authorization_cap_units' | 'daily_cap_units' | 'approval_threshold_units';
  readonly from: string | null;
  readonly to: string;
}

const POLICY_FIELDS = ['per_authorization_cap_units', 'daily_cap_units', 'approval_threshold_units'] as const;

/** The default policy fields of a rendered ledger.json (text), as decimal strings. */
function defaultPolicyOf(ledgerJson: string | null): Partial<Record<DefaultPolicyChange['field'], string>> {
  if (ledgerJson === null) return {};
  try {
    const policy = (JSON.parse(ledgerJson) as { default_policy?: Record<string, unknown> }).default_policy ?? {};
    return Object.fromEntries(POLICY_FIELDS.filter((field) => policy[field] !== undefined).map((field) => [field, String(policy[field])]));
  } catch {
    return {};
  }
}

function defaultPolicyChanges(activeLedgerJson: string | null, renderedLedgerJson: string | null): DefaultPolicyChange[] {
  const before = defaultPolicyOf(activeLedgerJson);
  const after = defaultPolicyOf(renderedLedgerJson);
  return POLICY_FIELDS.flatMap((field) => {
    const to = after[field];
    const from = before[field] ?? null;
    return to === undefined || to === from ? [] : [{ field, from, to }];
  });
}

async function profileContext(request: ProfileRequest): Promise<{ home: string; paths: ProfilePaths }> {
  const home = lexecHome(request.env);
  const { name } = await resolveProfileName(home, request.profileFlag);
  return { home, paths: profilePaths(home, name) };
}

/**
 * Runs a mutating command under the profile's launcher lock. The profile must exist first:
 * taking the lock creates `state/`, and a mistyped `--profile` must not leave directories behind.
 */
async function withLauncherLock<T>(paths: ProfilePaths, work: () => Promise<T>): Promise<T> {
  const source = await stat(paths.source).catch(() => null);
  if (source === null) throw profileMissing(paths);
  const release = await acquireLauncherLock(paths);
  try {
    return await work();
  } finally {
    await release();
  }
}

/** The active generation's manifest, or null before the first activation. */
export async function activeManifest(paths: ProfilePaths): Promise<GenerationManifest | null> {
  const id = await readActiveId(paths);
  if (id === null) return null;
  const manifest = await readManifest(paths, id);
  if (manifest === null) {
    throw new UserError('active_generation_missing', `The active generation ${id} of profile "${paths.name}" is not in ${paths.generationsDir}.`, {
      nextStep: 'Render the profile (`lexec stack render`) and activate the new generation (`lexec stack activate --generation <id>`).',
    });
  }
  return manifest;
}

/**
 * Renders a profile into a generation without activating it. Used by `stack render` and by the
 * first `stack start` (which then activates it); returns what changed against the active one.
 */
export async function renderProfile(paths: ProfilePaths, home: string, now: Date): Promise<RenderResult> {
  const { profile, text } = await loadProfile(home, paths.name);
  const rendered = renderGeneration({ profile, paths, build: readBuildInfo(), now });
  const outcome = await storeGeneration(paths, rendered, text);
  const stored = (await readManifest(paths, rendered.id)) ?? rendered.manifest;
  const { id: activeId, manifest: active } = await readableActive(paths);
  const activeFile = async (name: RuntimeFile) => (activeId === null || active === null ? null : readGenerationFile(paths, activeId, name).catch(() => null));
  const activeLedger = await activeFile('ledger.json');
  const diff: string[] = [];
  if (activeId !== null && activeId !== rendered.id) {
    for (const name of RUNTIME_FILES) {
      const before = await activeFile(name);
      const after = rendered.files[name] ?? null;
      if (before === after) continue;
      diff.push(createTwoFilesPatch(`${activeId}/${name}`, `${rendered.id}/${name}`, before ?? '', after ?? '', undefined, undefined, { context: 2 }).replace(/^=+\n/, ''));
    }
  }
  return {
    profile: paths.name,
    generation_id: rendered.id,
    outcome,
    active_generation_id: activeId,
    is_active: activeId === rendered.id,
    ...compareGenerations(active, stored),
    default_policy_changes: activeId === rendered.id ? [] : defaultPolicyChanges(activeLedger, rendered.files['ledger.json'] ?? null),
    diff: diff.join(''),
  };
}

/**
 * The active pointer and manifest as far as they can be read. Rendering must work when the
 * active generation is damaged or gone: a new generation is exactly how the operator repairs
 * that, so the comparison then treats every file as changed.
 */
async function readableActive(paths: ProfilePaths): Promise<{ id: string | null; manifest: GenerationManifest | null }> {
  const id = await readActiveId(paths).catch((error: unknown) => {
    if (error instanceof UserError) return null;
    throw error;
  });
  if (id === null) return { id: null, manifest: null };
  const manifest = await readManifest(paths, id).catch((error: unknown) => {
    if (error instanceof UserError) return null;
    throw error;
  });
  return { id, manifest };
}

/** `stack render`: renders, prints the id and the changes; never replaces the active generation. */
export async function renderStack(request: ProfileRequest & { now: Date }): Promise<RenderResult> {
  const { home, paths } = await profileContext(request);
  return withLauncherLock(paths, () => renderProfile(paths, home, request.now));
}

export interface GenerationSummary {
  readonly generation_id: string;
  readonly rendered_at: string;
  readonly active: boolean;
  readonly product_version: string;
  readonly commit: string;
  readonly build_kind: string;
}

export interface GenerationsResult {
  readonly profile: string;
  readonly active_generation_id: string | null;
  /** The `active` pointer could not be read; `activate` or `rollback` of a listed generation repairs it. */
  readonly active_pointer_damaged: boolean;
  readonly generations: readonly GenerationSummary[];
  /** Retained generations that cannot be used (unreadable manifest, files that no longer match it). */
  readonly damaged: readonly DamagedGeneration[];
  /** Generations `--keep N` removed (empty without it). */
  readonly pruned: readonly string[];
}

/**
 * `stack generations --keep N`: removes the sound generations beyond the N newest, never the
 * active one nor the one active before it (the rollback target); damaged ones are left for the
 * operator to inspect. Under the launcher lock. Returns the ids removed.
 */
export async function pruneStackGenerations(request: ProfileRequest & { keep: number }): Promise<string[]> {
  const paths = await knownProfilePaths(request);
  return withLauncherLock(paths, async () => {
    const active = await readActiveId(paths).catch(() => null);
    const previous = await readPreviousId(paths);
    const { sound } = await surveyGenerations(paths);
    const removed = sound.slice(request.keep).map((manifest) => manifest.generation_id).filter((id) => id !== active && id !== previous);
    for (const id of removed) await removeGeneration(paths, id);
    return removed;
  });
}

/** `stack generations`: every sound retained generation, newest first, the active one marked; the damaged ones apart. */
export async function listStackGenerations(request: ProfileRequest & { pruned?: readonly string[] }): Promise<GenerationsResult> {
  const paths = await knownProfilePaths(request);
  const active = await readActiveId(paths).catch((error: unknown) => {
    if (error instanceof UserError && error.code === 'active_generation_invalid') return undefined;
    throw error;
  });
  const survey = await surveyGenerations(paths);
  const generations = survey.sound.map((manifest) => ({
    generation_id: manifest.generation_id,
    rendered_at: manifest.rendered_at,
    active: manifest.generation_id === active,
    product_version: manifest.lineage.product_version,
    commit: manifest.lineage.commit,
    build_kind: manifest.lineage.build_kind,
  }));
  return {
    profile: paths.name,
    active_generation_id: active ?? null,
    active_pointer_damaged: active === undefined,
    generations,
    damaged: survey.damaged,
    pruned: request.pruned ?? [],
  };
}

export interface ActivateResult extends GenerationChange {
  readonly profile: string;
  readonly previous_generation_id: string | null;
  readonly active_generation_id: string;
  readonly changed: boolean;
}

/**
 * `stack activate` and `stack rollback`: point the profile at a retained generation. Refused
 * while the stack runs — a running component would otherwise disagree with the active files.
 */
export async function activateStackGeneration(request: ProfileRequest & { generationId: string; action: 'activate' | 'rollback' }): Promise<ActivateResult> {
  if (!generationIdSchema.safeParse(request.generationId).success) {
    throw new UsageError('generation_id_invalid', '--generation must be a generation id such as g3f9a0c1d2e4b5a6f (17 characters).', {
      nextStep: '`lexec stack generations` lists the retained ids.',
    });
  }
  const { paths } = await profileContext(request);
  return withLauncherLock(paths, async () => {
    // Every file is checked against its manifest first — before the running-stack check, so the
    // operator hears of a damaged target before stopping anything — and a tampered one is refused.
    const target = await verifiedManifest(paths, request.generationId);
    await assertStackStopped(paths, request.action);
    if (target === null) {
      throw new UserError('generation_not_found', `Profile "${paths.name}" has no retained generation ${request.generationId}.`, {
        nextStep: '`lexec stack generations` lists the retained ones; `lexec stack render` produces one from the profile.',
      });
    }
    // A damaged pointer or a missing generation is exactly what activating repairs.
    const { id: previous, manifest: previousManifest } = await readableActive(paths);
    if (previous !== target.generation_id) {
      // The one it replaces is kept by every prune, so a rollback to it stays possible.
      if (previous !== null) await writePreviousId(paths, previous);
      await writeActiveId(paths, target.generation_id);
    }
    return {
      profile: paths.name,
      previous_generation_id: previous,
      active_generation_id: target.generation_id,
      changed: previous !== target.generation_id,
      ...compareGenerations(previousManifest, target),
    };
  });
}
