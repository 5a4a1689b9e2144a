import { readBuildInfo, type BuildInfo } from '../../build-info.js';
import { UserError, type FieldIssue } from '../../errors.js';
import { loadProfile } from '../profiles/profile-store.js';
import { renderGeneration, type RenderedGeneration } from './render-generation.js';
import type { ProfilePaths } from '../home/stack-home.js';

/*
 * profile.toml read and rendered in memory only (nothing is written): what `stack start` compares
 * with the active generation, what `stack doctor` checks, and what `stack status` looks at when
 * profile.toml differs from the copy the active generation keeps. A profile that does not render
 * is data here, with the code and every field path the refusal would carry.
 */

/** Why profile.toml does not render now: the error `stack render` would give, as data. */
export interface ProfileProblem {
  readonly code: string;
  readonly message: string;
  readonly next_step: string;
  readonly issues: readonly FieldIssue[];
}

export type InMemoryRender = { readonly ok: true; readonly rendered: RenderedGeneration } | { readonly ok: false; readonly problem: ProfileProblem };

export async function renderInMemory(options: { home: string; paths: ProfilePaths; now: Date; build?: BuildInfo }): Promise<InMemoryRender> {
  const { home, paths, now, build = readBuildInfo() } = options;
  try {
    const { profile } = await loadProfile(home, paths.name);
    return { ok: true, rendered: renderGeneration({ profile, paths, build, now }) };
  } catch (error) {
    if (!(error instanceof UserError)) throw error;
    return { ok: false, problem: { code: error.code, message: error.message, next_step: error.nextStep, issues: error.issues } };
  }
}
