/*
 * What a look at a Temporal CLI binary found (temporal-cli-version.ts looks), and how messages
 * name it. Pure, so the doctor's rules and the executor's start can share the wording.
 */

export const TEMPORAL_CLI_MODULE = 'github.com/temporalio/cli';

/** The Temporal CLI release lexec is tested with (its test suite and CI run this one); what messages offer beside a pin. */
export const TESTED_TEMPORAL_CLI_VERSION = '1.5.1';

export type TemporalCliObservation =
  | { readonly state: 'missing' | 'not_a_file' | 'not_executable' }
  | { readonly state: 'failed'; readonly reason: string }
  | {
      readonly state: 'ran';
      /** The release, without a leading `v`; null when neither `--version` nor the build info names one. */
      readonly version: string | null;
      readonly source: 'version_output' | 'go_build_info';
      /** What `--version` itself reported (`1.5.1`, `0.0.0-DEV`), null when it printed no version. */
      readonly reported: string | null;
    };

/**
 * Where a version came from, for messages: empty for `--version`; for build info
 * ` (from its Go build info; \`--version\` says 0.0.0-DEV)`.
 */
export function versionSourceNote(observation: Extract<TemporalCliObservation, { state: 'ran' }>): string {
  if (observation.source === 'version_output') return '';
  return ` (from its Go build info; \`--version\` says ${observation.reported ?? 'no version'})`;
}

/** "reports no version": also says why when `--version` gave only an unstamped 0.0.0-DEV. */
export function describeMissingVersion(path: string, observation: Extract<TemporalCliObservation, { state: 'ran' }>): string {
  return observation.reported === null
    ? `\`${path} --version\` reports no version`
    : `\`${path} --version\` reports ${observation.reported} and its Go build info names no release of ${TEMPORAL_CLI_MODULE}`;
}

/**
 * The two ways out of a CLI that is not the pinned release: install the pinned one at the path,
 * or pin what is there (`reported`, the version it reports; null when it reports none or cannot
 * run: then point the settings at a CLI that does). `where` follows the field's name (" in
 * profile.toml"), `then` is what comes after; it always names the release lexec is tested with.
 */
export function pinWaysOut(options: { path: string; pinned: string; reported: string | null; where: string; then: string }): string {
  const { path, pinned, reported, where, then } = options;
  const tested = TESTED_TEMPORAL_CLI_VERSION;
  const pinIt =
    reported === null
      ? `set workflow_engine.temporal_cli${where} to the path and version of a Temporal CLI you have`
      : `change workflow_engine.temporal_cli.version${where} to ${reported}, the version it reports${reported === tested ? ' and the one lexec is tested with' : ''}`;
  const testedNote = reported === tested ? '' : ` lexec is tested with Temporal CLI ${tested}.`;
  return `Install Temporal CLI ${pinned} at ${path}, or ${pinIt}, then ${then}.${testedNote}`;
}
