import { Flags } from '@oclif/core';
import { LexecCommand } from '../../cli/lexec-command.js';
import type { Output } from '../../terminal/output.js';
import { profileFlags } from '../../cli/profile-flags.js';
import { renderActivation } from '../../launcher/generations/render-stack-generations.js';
import { activateStackGeneration, type ActivateResult } from '../../launcher/generations/stack-generations.js';

export default class StackActivate extends LexecCommand<ActivateResult> {
  static override summary = 'Make a retained generation the active one (the stack must be stopped).';
  static override description = 'Refused while the stack runs: `lexec stack stop` first, then `lexec stack start` (there is no restart).';
  static override examples = ['<%= config.bin %> <%= command.id %> --generation g3f9a0c1d2e4b5a6f'];
  static override flags = {
    ...profileFlags,
    generation: Flags.string({ required: true, summary: 'Generation id (see `lexec stack generations`).' }),
  };

  protected override async execute(): Promise<ActivateResult> {
    const { flags } = await this.parse(StackActivate);
    return activateStackGeneration({ env: process.env, profileFlag: flags.profile, generationId: flags.generation, action: 'activate' });
  }

  protected override renderHuman(result: ActivateResult, output: Output): void {
    renderActivation(result, output);
  }
}
