import { ExitCode, UserError } from '../../errors.js';
import { describeBusyPort, probePort } from '../../process/port-probe.js';
import { stackOfProcess } from '../home/stack-of-process.js';
import { generationComponents, listenHostOf, type GenerationManifest } from '../generations/render-generation.js';
import type { ProfilePaths } from '../home/stack-home.js';
import { runDoctor } from '../doctor/stack-doctor.js';

/*
 * What `stack start` checks before it spawns anything (docs/stack-runtime.md "Start sequence";
 * spec §8 Operations 5: "start runs doctor … when needed"). First the ports, because a busy port
 * is the commonest reason a start cannot work and its holder is worth naming on its own (exit 1);
 * then the whole doctor: a failed check stops the start with exit 3, as `stack doctor` would.
 */

export interface PreflightRequest {
  readonly home: string;
  readonly paths: ProfilePaths;
  readonly manifest: GenerationManifest;
  /**
   * This start activated the generation (the profile had none) and withdraws it if the start
   * fails: a change to profile.toml then takes effect at the next start, without render and activate.
   */
  readonly freshGeneration: boolean;
}

export interface PreflightResult {
  /** Ids of the doctor checks that warned (the start goes on; `stack doctor` says more). */
  readonly warnings: readonly string[];
}

export async function preflightChecks({ home, paths, manifest, freshGeneration }: PreflightRequest): Promise<PreflightResult> {
  await assertPortsFree(paths, manifest, freshGeneration);
  const report = await runDoctor({ home, paths });
  const failedChecks = report.checks.filter((check) => check.status === 'fail');
  if (failedChecks.length > 0) {
    throw new UserError('doctor_failed', `Profile "${paths.name}" cannot start: ${failedChecks.length} doctor check${failedChecks.length === 1 ? '' : 's'} failed.`, {
      nextStep: `Fix each check listed (\`lexec stack doctor --profile ${paths.name}\` shows the full report with a fix for each), then start again.`,
      issues: failedChecks.map((check) => ({ path: check.id, message: check.fix === null ? check.summary : `${check.summary} — ${check.fix}` })),
      exitCode: ExitCode.doctorFailed,
    });
  }
  return { warnings: report.checks.filter((check) => check.status === 'warn').map((check) => check.id) };
}

/** Throws a user error (exit 1) naming every port that is in use and who holds it (and its stack, when it is a lexec stack's). */
async function assertPortsFree(paths: ProfilePaths, manifest: GenerationManifest, freshGeneration: boolean): Promise<void> {
  const busy = [];
  const temporal = manifest.components.executor?.temporal;
  const owned: [string, number | undefined][] = [
    ...generationComponents(manifest).map((component): [string, number | undefined] => [component, manifest.components[component]?.port]),
    // A managed_local executor's Temporal server: its gRPC frontend and its web UI.
    ['temporal', temporal?.port],
    ['temporal_ui', temporal?.ui_port],
  ];
  for (const [component, port] of owned) {
    if (port === undefined) continue;
    const probe = await probePort(port, listenHostOf(manifest, component));
    if (!probe.free) busy.push({ component, probe, stack: probe.holder === null ? null : await stackOfProcess(probe.holder.pid) });
  }
  if (busy.length === 0) return;
  const described = busy.map(({ component, probe, stack }) => `${component}: ${describeBusyPort(probe, stack)}`);
  const holder = busy.find(({ stack }) => stack !== null)?.stack ?? null;
  const stop = holder === null ? 'Stop that process' : `Stop that stack (\`LEXEC_HOME=${holder.home} lexec stack stop --profile ${holder.profile}\`)`;
  const ports = `give profile "${paths.name}" other ports in ${paths.source} ([ports])`;
  throw new UserError('port_in_use', `Profile "${paths.name}" cannot start: ${described.join('; ')}.`, {
    nextStep: freshGeneration
      ? `${stop}, or ${ports}, then start again (nothing was activated: the next start renders the profile as it is then).`
      : `${stop}, or ${ports}, then \`lexec stack render\`, \`lexec stack activate --generation <id>\` and start again.`,
    issues: busy.map(({ component, probe, stack }) => ({ path: `ports.${component}`, message: describeBusyPort(probe, stack) })),
  });
}
