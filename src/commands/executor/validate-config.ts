import { Flags } from '@oclif/core';
import { LexecCommand } from '../../cli/lexec-command.js';
import type { Output } from '../../terminal/output.js';
import { validateExecutorConfig, type ValidateConfigResult } from '../../executor/config/validate-executor-config.js';
import { renderValidateExecutorConfig } from '../../executor/config/render-validate-executor-config.js';

export default class ExecutorValidateConfig extends LexecCommand<ValidateConfigResult> {
  static override summary = 'Validate an executor configuration file (schema version 3) without touching anything else.';
  static override description =
    'Checks the JSON configuration file and reports every problem with its field path. It creates no file or directory, reads no secret store and connects to no service.';
  static override examples = [
    '<%= config.bin %> <%= command.id %> --config /etc/lexec/executor.json',
    '<%= config.bin %> <%= command.id %> --config "$PWD/executor.json" --json',
  ];
  static override flags = {
    config: Flags.string({ required: true, summary: 'Absolute path of the executor configuration file.' }),
  };

  protected override async execute(): Promise<ValidateConfigResult> {
    const { flags } = await this.parse(ExecutorValidateConfig);
    return validateExecutorConfig(flags.config);
  }

  protected override renderHuman(result: ValidateConfigResult, output: Output): void {
    renderValidateExecutorConfig(result, output);
  }
}
