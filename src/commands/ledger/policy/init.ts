import { Flags } from '@oclif/core';
import { LexecCommand } from '../../../cli/lexec-command.js';
import type { Output } from '../../../terminal/output.js';
import { renderPolicyInit } from '../../../ledger/client/render-ledger.js';
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
    renderPolicyInit(result, output);
  }
}
