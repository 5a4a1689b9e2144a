import { Flags } from '@oclif/core';
import { wholeNumberFlag } from '../../cli/flag-values.js';
import { LexecCommand } from '../../cli/lexec-command.js';
import type { Output } from '../../terminal/output.js';
import { profileFlags } from '../../cli/profile-flags.js';
import { listStackGenerations, pruneStackGenerations, type GenerationsResult } from '../../launcher/generations/stack-generations.js';
import { renderGenerations } from '../../launcher/generations/render-stack-generations.js';

export default class StackGenerations extends LexecCommand<GenerationsResult> {
  static override summary = "List the profile's retained generations, newest first; the active one is marked.";
  static override examples = ['<%= config.bin %> <%= command.id %>', '<%= config.bin %> <%= command.id %> --json'];
  static override flags = {
    ...profileFlags,
    keep: Flags.string({ summary: 'Prune: keep the N newest generations (1-1000) and remove the others — never the active one nor the one active before it.' }),
  };

  protected override async execute(): Promise<GenerationsResult> {
    const { flags } = await this.parse(StackGenerations);
    const request = { env: process.env, profileFlag: flags.profile };
    const pruned = flags.keep === undefined ? [] : await pruneStackGenerations({ ...request, keep: wholeNumberFlag(flags.keep, '--keep', 1, 1000) });
    return listStackGenerations({ ...request, pruned });
  }

  protected override renderHuman(result: GenerationsResult, output: Output): void {
    renderGenerations(result, output);
  }
}
