import { LexecCommand } from '../../cli/lexec-command.js';
import type { Output } from '../../terminal/output.js';
import { profileFlags } from '../../cli/profile-flags.js';
import { listStackProfiles, type ProfilesResult } from '../../launcher/profiles/stack-profiles.js';
import { renderProfiles } from '../../launcher/profiles/render-profiles.js';

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
    renderProfiles(result, output);
  }
}
