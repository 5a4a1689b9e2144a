import type { BootstrapManagedResult } from './bootstrap-managed-credentials.js';
import type { Output } from '../terminal/output.js';

/** Human form of `executor credentials bootstrap-managed`: categorical, never a capability. */
export function renderBootstrapManagedCredentials(result: BootstrapManagedResult, output: Output): void {
  output.line(`${output.style.ok('✔')} managed credentials ready in ${result.state_dir}`);
  output.line(`  caller capability           ${result.caller_capability}`);
  output.line(`  reconciliation capability   ${result.reconciliation_capability}`);
  output.line(`  ledger credential           ${result.ledger_credential} (at ${result.ledger_endpoint})`);
}
