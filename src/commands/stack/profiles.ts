import { LexecCommand } from '../../cli/lexec-command.js';
import type { Output } from '../../terminal/output.js';
import { profileFlags } from '../../cli/profile-flags.js';
import { listStackProfiles, type ProfilesResult } from '../../launcher/profiles/stack-profiles.js';

export default class StackProfiles extends LexecCommand<ProfilesResult> {
  static override summary = 'List the launcher profiles: kind, selection, active generation, running or not.';
  static override description = 'Profiles live under $LEXEC_HOME/profiles (default ~/.lexec). Local-only: needs no running stack.';
  static override examples = ['<%= config.bin %> <%= command.id %>', '<%= config.bin %> <%= command.id %> --json'];
  static override flags = { ...profileFlags };

  protected override async execute(): Promise<ProfilesResult> {
    const { flags } = await this.parse(StackProfiles);
    return listStackProfiles({ env: process.env, profileFlag: flags.profile });
  }

  protected override renderHuman(result: ProfilesResult, output: Output): void {
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
}
