import type { ValidateConfigResult } from './validate-executor-config.js';
import type { Output } from '../../terminal/output.js';

/** Human form of `executor validate-config`: the file is valid, and what it configures. */
export function renderValidateExecutorConfig(result: ValidateConfigResult, output: Output): void {
  const { summary } = result;
  output.line(`${output.style.ok('✔')} ${result.config_path} is a valid executor configuration (schema version ${result.schema_version}).`);
  output.line(`  listen            ${summary.http_listen}`);
  output.line(`  ledger version    ${summary.ledger_product_version}`);
  output.line(`  credentials       ${summary.credentials_mode}`);
  output.line(`  workflow engine   ${summary.workflow_engine_mode}`);
  output.line(`  providers         ${summary.providers_mode}`);
  output.line(`  targets           ${summary.execution_target_ids.length === 0 ? '(none)' : summary.execution_target_ids.join(', ')}`);
  if (summary.development_allowance) output.line(output.style.warn('  development builds are allowed (development_allowance: true)'));
}
