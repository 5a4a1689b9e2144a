import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { ProfilePaths } from '../home/stack-home.js';
import type { ProfileProblem } from '../generations/render-in-memory.js';

/*
 * Whether the next `stack start` of the profile will refuse because profile.toml no longer renders
 * (a typo saved under a running stack). `stack status` must stay light, so the profile is loaded
 * and rendered (TOML, zod, the executor's rules: ~0.2 s) only when profile.toml differs from the
 * copy the active generation keeps of the source it was rendered from; an unchanged profile
 * rendered then and costs two small reads.
 */

/** The copy of profile.toml a generation keeps (generation-store.ts, not imported: it loads zod). */
const GENERATION_SOURCE = 'profile.toml';

export async function profileProblem(home: string, paths: ProfilePaths, activeId: string | null): Promise<ProfileProblem | null> {
  const current = await readFile(paths.source, 'utf8').catch(() => null);
  // No profile.toml at all is not a typo: a first start creates the default one, status shows the rest.
  if (current === null) return null;
  const kept = activeId === null ? null : await readFile(join(paths.generationsDir, activeId, GENERATION_SOURCE), 'utf8').catch(() => null);
  if (current === kept) return null;
  const { renderInMemory } = await import('../generations/render-in-memory.js');
  const render = await renderInMemory({ home, paths, now: new Date() });
  return render.ok ? null : render.problem;
}
