import type { ActivateResult, GenerationsResult, RenderResult } from './stack-generations.js';
import type { Output } from '../../terminal/output.js';

/** Human lines for `stack render`: the generation, what it changes, and how to apply it. */
export function renderRenderResult(result: RenderResult, output: Output): void {
  const outcome = result.outcome === 'created' ? 'new' : result.outcome === 'repaired' ? 'damaged before: set aside and written again' : 'rendered before';
  output.line(`generation ${output.style.bold(result.generation_id)} (${outcome}) for profile ${result.profile}`);
  if (result.is_active) {
    output.line('It is the active generation: nothing to apply.');
    return;
  }
  output.line(`changed files against ${result.active_generation_id ?? 'no active generation'}: ${result.changed_files.join(', ') || 'none'}`);
  output.line(`components affected: ${result.affected_components.join(', ') || 'none'}`);
  if (result.diff !== '') {
    output.line(`what changes in the rendered files:`);
    for (const line of result.diff.trimEnd().split('\n')) {
      output.line(line.startsWith('+') && !line.startsWith('+++') ? output.style.ok(line) : line.startsWith('-') && !line.startsWith('---') ? output.style.error(line) : line);
    }
  }
  if (result.default_policy_changes.length > 0) {
    const changes = result.default_policy_changes.map((change) => `${change.field} ${change.from ?? '(none)'} → ${change.to}`).join(', ');
    output.line(`default spend policy: ${changes}`);
    output.line('  applies at the next start to every agent without its own policy (one never given one with `lexec ledger policy set`)');
  }
  output.line(output.style.dim(`Apply: lexec stack stop, lexec stack activate --generation ${result.generation_id}, lexec stack start`));
}

/** Human lines for `stack generations`: newest first, the active one marked, damaged ones named. */
export function renderGenerations(result: GenerationsResult, output: Output): void {
  if (result.generations.length === 0 && result.damaged.length === 0) output.line(`Profile ${result.profile} has no generation yet (\`lexec stack render\`).`);
  for (const generation of result.generations) {
    const mark = generation.active ? output.style.ok('active') : '      ';
    output.line(`${mark} ${generation.generation_id}  ${generation.rendered_at}  ${generation.product_version} ${generation.build_kind} ${generation.commit.slice(0, 12)}`);
  }
  for (const damaged of result.damaged) {
    output.line(`${output.style.error('damaged')} ${damaged.generation_id}  ${damaged.problem}${damaged.generation_id === result.active_generation_id ? ' (the active one)' : ''}`);
  }
  if (result.damaged.length > 0) output.line(output.style.dim('A damaged generation is never started: `lexec stack render` re-creates the one the profile renders; activate another with `lexec stack activate --generation <id>`.'));
  if (result.pruned.length > 0) output.line(`removed ${result.pruned.length} old generation${result.pruned.length === 1 ? '' : 's'}: ${result.pruned.join(', ')}`);
  if (result.active_pointer_damaged) output.line(output.style.warn('The active pointer is damaged: `lexec stack activate --generation <id>` of a listed generation repairs it.'));
}

/** Human lines for `stack activate` and `stack rollback`. */
export function renderActivation(result: ActivateResult, output: Output): void {
  if (!result.changed) {
    output.line(`generation ${result.active_generation_id} is already active for profile ${result.profile}`);
    return;
  }
  output.line(`${output.style.ok('✔')} profile ${result.profile}: active generation ${output.style.bold(result.active_generation_id)} (was ${result.previous_generation_id ?? 'none'})`);
  output.line(`changed files: ${result.changed_files.join(', ') || 'none'}; components affected: ${result.affected_components.join(', ') || 'none'}`);
  output.line(output.style.dim('Start it with `lexec stack start`.'));
}
