import { LexecCommand } from '../../cli/lexec-command.js';
import type { Output } from '../../terminal/output.js';
import { profileFlags } from '../../cli/profile-flags.js';
import { renderStack, type RenderResult } from '../../launcher/generations/stack-generations.js';

export default class StackRender extends LexecCommand<RenderResult> {
  static override summary = 'Render the profile into a generation (immutable runtime files); never activates it.';
  static override description =
    'Same profile and same binary give the same generation id. Prints the id, the files changed against the active generation and the components affected. Apply it with `lexec stack stop`, `lexec stack activate --generation <id>`, `lexec stack start`. Never calls the provider.';
  static override examples = ['<%= config.bin %> <%= command.id %>', '<%= config.bin %> <%= command.id %> --profile live --json'];
  static override flags = { ...profileFlags };

  protected override async execute(): Promise<RenderResult> {
    const { flags } = await this.parse(StackRender);
    return renderStack({ env: process.env, profileFlag: flags.profile, now: new Date() });
  }

  protected override renderHuman(result: RenderResult, output: Output): void {
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
}
