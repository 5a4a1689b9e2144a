import { readBuildInfo, type BuildInfo } from '../build-info.js';
import { LexecCommand } from '../cli/lexec-command.js';
import type { Output } from '../terminal/output.js';

export default class Version extends LexecCommand<BuildInfo> {
  static override summary = 'Show the product version, executor contract version, source commit and build kind.';
  static override examples = ['<%= config.bin %> version', '<%= config.bin %> version --json'];

  protected override async execute(): Promise<BuildInfo> {
    await this.parse(Version);
    return readBuildInfo();
  }

  protected override renderHuman(info: BuildInfo, output: Output): void {
    output.line(`${output.style.bold(info.product)} ${info.product_version}`);
    output.line(`  contract  ${info.contract_version}`);
    output.line(`  commit    ${info.commit}`);
    output.line(`  build     ${info.build_kind === 'release' ? output.style.ok(info.build_kind) : output.style.warn(info.build_kind)}`);
  }
}
