import { UserError } from '../errors.js';
import { describeBusyPort, probePort } from '../stack/port-probe.js';
import { generationComponents, type GenerationManifest } from '../stack/render-generation.js';
import type { ProfilePaths } from '../stack/stack-home.js';

/*
 * What `stack start` checks before it spawns anything (docs/stack-runtime.md "Start sequence").
 * This is the seam where `stack doctor`'s checks are to be wired in (spec §8 Operations 5:
 * "start runs doctor ... when needed"); until then it checks what a start cannot survive:
 * every port of the generation must be free, and a busy one is named with its holder.
 */

export interface PreflightRequest {
  readonly paths: ProfilePaths;
  readonly manifest: GenerationManifest;
}

/** Throws a user error (exit 1) naming every port that is in use and who holds it. */
export async function preflightChecks({ paths, manifest }: PreflightRequest): Promise<void> {
  const busy = [];
  for (const component of generationComponents(manifest)) {
    const port = manifest.components[component]?.port;
    if (port === undefined) continue;
    const probe = await probePort(port);
    if (!probe.free) busy.push({ component, probe });
  }
  if (busy.length === 0) return;
  const described = busy.map(({ component, probe }) => `${component}: ${describeBusyPort(probe)}`);
  throw new UserError('port_in_use', `Profile "${paths.name}" cannot start: ${described.join('; ')}.`, {
    nextStep: `Stop that process, or give the profile other ports in ${paths.source} ([ports]), then \`lexec stack render\`, \`lexec stack activate --generation <id>\` and start again.`,
    issues: busy.map(({ component, probe }) => ({ path: `ports.${component}`, message: describeBusyPort(probe) })),
  });
}
