import { readBuildInfo, type BuildInfo } from '../build-info.js';
import { LexecCommand } from '../cli/lexec-command.js';
import type { Output } from '../terminal/output.js';
import { renderVersion } from '../cli/render-version.js';

export default class Version extends LexecCommand<BuildInfo> {
  static override summary = 'Show the product version, executor contract version, source commit and build kind.';
  static override examples = ['<%= config.bin %> version', '<%= config.bin %> version --json'];

  protected override async execute(): Promise<BuildInfo> {
    await this.parse(Version);
    return readBuildInfo();
  }

  protected override renderHuman(info: BuildInfo, output: Output): void {
    renderVersion(info, output);
  }
}
