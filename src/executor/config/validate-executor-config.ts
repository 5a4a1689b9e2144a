import { UserError } from '../../errors.js';
import { EXECUTOR_CONFIG_SCHEMA_VERSION, type ExecutorConfig } from './executor-config-schema.js';
import { parseExecutorConfig } from './parse-executor-config.js';
import { readJsonDocument } from '../../config/read-json-document.js';

/** What `executor validate-config` reports for a valid file. Documented in docs/cli-output.md. */
export interface ValidateConfigResult {
  readonly config_path: string;
  readonly schema_version: typeof EXECUTOR_CONFIG_SCHEMA_VERSION;
  readonly valid: true;
  readonly summary: {
    readonly http_listen: string;
    readonly ledger_product_version: string;
    readonly credentials_mode: ExecutorConfig['credentials']['mode'];
    readonly workflow_engine_mode: ExecutorConfig['workflow_engine']['mode'];
    readonly providers_mode: ExecutorConfig['providers']['mode'];
    readonly execution_target_ids: readonly string[];
    readonly development_allowance: boolean;
  };
}

/** Reads the file and returns the valid configuration, or throws `config_invalid` listing every problem. */
export async function loadExecutorConfig(configPath: string): Promise<ExecutorConfig> {
  const document = await readJsonDocument(configPath, 'configuration file');
  const parsed = parseExecutorConfig(document);
  if (!parsed.ok) {
    const count = parsed.issues.length;
    throw new UserError('config_invalid', `The configuration file ${configPath} has ${count} problem${count === 1 ? '' : 's'}.`, {
      nextStep: 'Fix each field listed (docs/configuration.md describes every field), then validate again.',
      issues: parsed.issues,
    });
  }
  return parsed.value;
}

/**
 * Validates an executor configuration file, and does nothing else: it creates no file or
 * directory, reads no secret store and connects to nothing (spec §1 process commands).
 */
export async function validateExecutorConfig(configPath: string): Promise<ValidateConfigResult> {
  const config = await loadExecutorConfig(configPath);
  const host = config.http.host.includes(':') ? `[${config.http.host}]` : config.http.host;
  return {
    config_path: configPath,
    schema_version: EXECUTOR_CONFIG_SCHEMA_VERSION,
    valid: true,
    summary: {
      http_listen: `${host}:${config.http.port}`,
      ledger_product_version: config.ledger.product_version,
      credentials_mode: config.credentials.mode,
      workflow_engine_mode: config.workflow_engine.mode,
      providers_mode: config.providers.mode,
      execution_target_ids: config.execution_targets.map((target) => target.target_id),
      development_allowance: config.development_allowance,
    },
  };
}
