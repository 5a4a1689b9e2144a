import type { BuildInfo } from '../build-info.js';
import type { Output } from '../terminal/output.js';

/** Human form of `lexec version` (the CLI's own command, so its renderer lives with the CLI). */
export function renderVersion(info: BuildInfo, output: Output): void {
  output.line(`${output.style.bold(info.product)} ${info.product_version}`);
  output.line(`  contract  ${info.contract_version}`);
  output.line(`  commit    ${info.commit}`);
  output.line(`  build     ${info.build_kind === 'release' ? output.style.ok(info.build_kind) : output.style.warn(info.build_kind)}`);
}
