/*
 * What a look at a Temporal CLI binary found (temporal-cli-version.ts looks), and how messages
 * name it. Pure, so the doctor's rules and the executor's start can share the wording.
 */

export const TEMPORAL_CLI_MODULE = 'github.com/temporalio/cli';

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
