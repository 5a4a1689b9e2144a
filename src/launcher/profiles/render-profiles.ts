import type { ProfilesResult, SelectResult } from './stack-profiles.js';
import type { Output } from '../../terminal/output.js';

/** Human form of `stack profiles`: one line per profile, the one commands use marked. */
export function renderProfiles(result: ProfilesResult, output: Output): void {
  if (result.profiles.length === 0) {
    output.line(`No profiles under ${result.home} yet. \`lexec stack start\` creates "${result.effective.name}" from the shipped example.`);
    return;
  }
  for (const profile of result.profiles) {
    const mark = profile.selected ? output.style.bold('*') : ' ';
    const state = profile.running ? output.style.ok('running') : 'stopped';
    const detail = profile.problem === null ? `${profile.kind ?? '?'}, generation ${profile.active_generation_id ?? 'none'}` : output.style.error(profile.problem);
    output.line(`${mark} ${profile.name}  ${state}  ${detail}`);
  }
  output.line(output.style.dim(`* = the profile commands use (${result.effective.source}); home ${result.home}`));
}

/** Human form of `stack select`. */
export function renderSelection(result: SelectResult, output: Output): void {
  output.line(`${output.style.ok('✔')} selected profile ${output.style.bold(result.selected)}${result.previous !== null && result.previous !== result.selected ? ` (was ${result.previous})` : ''}`);
}
