import { Flags } from '@oclif/core';
import { wholeNumberFlag } from '../../cli/flag-values.js';
import { LexecCommand } from '../../cli/lexec-command.js';
import type { Output } from '../../terminal/output.js';
import { profileFlags } from '../../cli/profile-flags.js';
import { listStackGenerations, pruneStackGenerations, type GenerationsResult } from '../../launcher/generations/stack-generations.js';

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
}
