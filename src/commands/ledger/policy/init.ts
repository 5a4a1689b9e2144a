import { Flags } from '@oclif/core';
import { formatUnits } from '../../../domain/money.js';
import { LexecCommand } from '../../../cli/lexec-command.js';
import type { Output } from '../../../terminal/output.js';
import { initPolicyFile, type PolicyInitResult } from '../../../ledger/client/ledger-policy.js';

export default class LedgerPolicyInit extends LexecCommand<PolicyInitResult> {
  static override summary = 'Write a starter spend policy file to edit and apply with `ledger policy set` (local only).';
  static override description = 'Needs no ledger and no token. An existing file is not replaced.';
  static override examples = ['<%= config.bin %> <%= command.id %> --file "$PWD/image-bot.policy.json"'];
  static override flags = {
    file: Flags.string({ required: true, summary: 'Absolute path of the new policy file.' }),
  };

  protected override async execute(): Promise<PolicyInitResult> {
    const { flags } = await this.parse(LedgerPolicyInit);
    return initPolicyFile(flags.file);
  }

  protected override renderHuman(result: PolicyInitResult, output: Output): void {
    const { policy } = result;
    output.line(`${output.style.ok('✔')} starter policy written to ${result.policy_file}`);
    output.line(`  per authorization   ${formatUnits(BigInt(policy.per_authorization_cap_units), policy.currency)}`);
    output.line(`  daily (rolling 24h) ${formatUnits(BigInt(policy.daily_cap_units), policy.currency)}`);
    output.line(`  approval above      ${formatUnits(BigInt(policy.approval_threshold_units), policy.currency)}`);
    output.line(output.style.dim('  edit it, then: lexec ledger policy set --agent-id <id> --file <path>'));
  }
}
