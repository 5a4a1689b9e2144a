import { Args } from '@oclif/core';
import { LexecCommand } from '../../cli/lexec-command.js';
import type { Output } from '../../terminal/output.js';
import { selectStackProfile, type SelectResult } from '../../launcher/profiles/stack-profiles.js';
import { renderSelection } from '../../launcher/profiles/render-profiles.js';

export default class StackSelect extends LexecCommand<SelectResult> {
  static override summary = 'Select the profile later commands act on (saved under $LEXEC_HOME).';
  static override description = 'The profile must exist and be valid. `--profile <name>` on any command overrides the selection for that command only.';
  static override examples = ['<%= config.bin %> <%= command.id %> sandbox'];
  static override args = { name: Args.string({ required: true, description: 'Profile name (see `lexec stack profiles`).' }) };

  protected override async execute(): Promise<SelectResult> {
    const { args } = await this.parse(StackSelect);
    return selectStackProfile({ env: process.env, name: args.name });
  }

  protected override renderHuman(result: SelectResult, output: Output): void {
    renderSelection(result, output);
  }
}
