import type { ActivateResult } from './stack-generations.js';
import type { Output } from '../../terminal/output.js';

/** Human lines for activate and rollback. */
export function renderActivation(result: ActivateResult, output: Output): void {
  if (!result.changed) {
    output.line(`generation ${result.active_generation_id} is already active for profile ${result.profile}`);
    return;
  }
  output.line(`${output.style.ok('✔')} profile ${result.profile}: active generation ${output.style.bold(result.active_generation_id)} (was ${result.previous_generation_id ?? 'none'})`);
  output.line(`changed files: ${result.changed_files.join(', ') || 'none'}; components affected: ${result.affected_components.join(', ') || 'none'}`);
  output.line(output.style.dim('Start it with `lexec stack start`.'));
}
