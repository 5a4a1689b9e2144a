import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { z } from 'zod';
import type { ExecutorConfig } from '../../executor/config/executor-config-schema.js';
import { UserError } from '../../errors.js';
import { providerCatalog, type ProviderCatalog } from '../../executor/provider-catalog.js';
import { generationDir } from '../generations/generation-store.js';
import { readHandoff } from '../handoff/handoff.js';
import type { ProfilePaths } from '../home/stack-home.js';
import { runningSupervisorPid } from '../home/stack-locks.js';
import { existingProfilePaths, type ProfileRequest } from '../profiles/existing-profile.js';
import { loadExecutorConfig } from '../../executor/config/validate-executor-config.js';
import { activeManifest } from '../generations/stack-generations.js';

/*
 * `lexec stack catalog` (docs/stack-logs.md "Catalog"): the sanitised provider catalog (spec §2,
 * schema version 1) of the profile's active generation, computed locally from its executor.json
 * by the executor's own catalog code. It reads files only: it never calls the provider (or any
 * server), and it claims no live qualification.
 */

/**
 * Where `credential_reference_present` comes from. The spec makes it true only once server
 * startup resolved the configured secret: `executor_startup` when the stack runs this very
 * generation and its executor recorded the fact; `not_resolved` otherwise, and the fact is false
 * (the launcher reads no secret store to answer a catalog query); `not_applicable` when the
 * providers mode is not live, so there is no credential reference at all.
 */
export type CredentialReferenceBasis = 'executor_startup' | 'not_resolved' | 'not_applicable';

export interface CatalogResult {
  readonly profile: string;
  readonly generation_id: string;
  readonly credential_reference_basis: CredentialReferenceBasis;
  readonly catalog: ProviderCatalog;
}

/** The one field read back from the catalog the running executor wrote at startup. */
const startupCatalogSchema = z.object({ facts: z.object({ credential_reference_present: z.boolean() }) });

/** The running executor's own answer, only when it runs the generation asked about. */
async function startupCredentialFact(paths: ProfilePaths, generationId: string, catalogPath: string): Promise<boolean | null> {
  const supervisorPid = await runningSupervisorPid(paths);
  if (supervisorPid === null) return null;
  const handoff = await readHandoff(paths).catch(() => null);
  if (handoff?.supervisor_pid !== supervisorPid || handoff.generation_id !== generationId) return null;
  const text = await readFile(catalogPath, 'utf8').catch(() => null);
  if (text === null) return null;
  try {
    const parsed = startupCatalogSchema.safeParse(JSON.parse(text));
    return parsed.success ? parsed.data.facts.credential_reference_present : null;
  } catch {
    return null;
  }
}

export interface GenerationCatalog {
  readonly credential_reference_basis: CredentialReferenceBasis;
  readonly catalog: ProviderCatalog;
}

/**
 * The catalog of one generation from its executor configuration, as `stack catalog` shows it and
 * the doctor reports it: `credential_reference_present` is true only when a running executor of
 * this very generation recorded at its startup that the secret resolved. Reads files only.
 */
export async function generationCatalog(paths: ProfilePaths, generationId: string, config: ExecutorConfig): Promise<GenerationCatalog> {
  if (config.providers.mode !== 'live') return { credential_reference_basis: 'not_applicable', catalog: providerCatalog(config, false) };
  const startupFact = await startupCredentialFact(paths, generationId, config.storage.catalog_path);
  return { credential_reference_basis: startupFact === null ? 'not_resolved' : 'executor_startup', catalog: providerCatalog(config, startupFact ?? false) };
}

export async function stackCatalog(request: ProfileRequest): Promise<CatalogResult> {
  const paths = await existingProfilePaths(request);
  const manifest = await activeManifest(paths);
  if (manifest === null) {
    throw new UserError('no_active_generation', `Profile "${paths.name}" has no active generation, so there is no catalog to show yet.`, {
      nextStep: `Run \`lexec stack render --profile ${paths.name}\` then \`lexec stack activate --generation <id>\` (or \`lexec stack start --profile ${paths.name}\`, which does both on first use).`,
    });
  }
  const config = await loadExecutorConfig(join(generationDir(paths, manifest.generation_id), 'executor.json'));
  return { profile: paths.name, generation_id: manifest.generation_id, ...(await generationCatalog(paths, manifest.generation_id, config)) };
}
