import { LexecCommand } from '../../cli/lexec-command.js';
import type { Output } from '../../terminal/output.js';
import { profileFlags } from '../../cli/profile-flags.js';
import { renderStack, type RenderResult } from '../../launcher/generations/stack-generations.js';
import { renderRenderResult } from '../../launcher/generations/render-stack-generations.js';

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
    renderRenderResult(result, output);
  }
}
