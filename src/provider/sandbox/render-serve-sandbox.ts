import type { Output } from '../../terminal/output.js';
import type { SandboxStopped } from './serve-sandbox.js';

/** Human form of `provider sandbox serve` once it stopped. */
export function renderSandboxStopped(result: SandboxStopped, output: Output): void {
  output.line(`sandbox provider stopped (${result.signal}; ${result.submissions} submission${result.submissions === 1 ? '' : 's'} received)`);
}
