import { Args, Flags } from '@oclif/core';
import { wholeNumberFlag } from '../../../cli/flag-values.js';
import { LexecCommand } from '../../../cli/lexec-command.js';
import type { Output } from '../../../terminal/output.js';
import { profileFlags } from '../../../cli/profile-flags.js';
import { reconciliationConnector } from '../../../stack-client/connect-executor.js';
import { renderReconciliationResolved } from '../../../executor/client/render-reconciliation.js';
import { UsageError } from '../../../errors.js';
import { resolveReconciliation, type ReconciliationResolveResult, type Resolution } from '../../../executor/client/executor-reconciliation.js';

const HELP = 'Run `lexec executor reconciliation resolve --help` to see its flags.';

export default class ExecutorReconciliationResolve extends LexecCommand<ReconciliationResolveResult> {
  static override summary = 'Resolve an execution awaiting a human: settle it with a precise receipt, or release it when the provider proves no charge.';
  static override description =
    "--settle settles with the receipt the executor kept, or with one for --images-billed images under the execution's frozen price (needed when none was kept). --release releases the authorization when the provider's records show no charge. --note says why (recorded with the resolution). The same resolution again is a replay; a different one is refused. Uses the running stack's reconciliation capability.";
  static override examples = [
    '<%= config.bin %> <%= command.id %> exe_0123456789abcdef0123456789abcdef --settle --images-billed 2 --note "provider dashboard shows 2 images billed"',
    '<%= config.bin %> <%= command.id %> exe_0123456789abcdef0123456789abcdef --release --note "provider confirmed no charge (ticket 4711)"',
  ];
  static override args = { execution_id: Args.string({ required: true, description: 'The execution to resolve (exe_ and 32 hex digits).' }) };
  static override flags = {
    ...profileFlags,
    settle: Flags.boolean({ default: false, summary: 'Settle: the provider charged for it.' }),
    release: Flags.boolean({ default: false, summary: 'Release: the provider proves there was no charge.' }),
    'images-billed': Flags.string({ summary: 'With --settle: the number of images the provider charged (when the executor kept no receipt).' }),
    note: Flags.string({ required: true, summary: 'Why (1-500 characters); recorded with the resolution.' }),
  };

  protected override async execute(): Promise<ReconciliationResolveResult> {
    const { args, flags } = await this.parse(ExecutorReconciliationResolve);
    if (!/^exe_[0-9a-f]{32}$/.test(args.execution_id)) {
      throw new UsageError('invalid_argument', 'EXECUTION_ID must be an execution id (exe_ and 32 hex digits).', { nextStep: '`lexec executor reconciliation list` lists them.' });
    }
    if (flags.settle === flags.release) throw new UsageError('usage_error', 'Pass exactly one of --settle and --release.', { nextStep: HELP });
    if (flags.release && flags['images-billed'] !== undefined) throw new UsageError('usage_error', '--images-billed goes with --settle only.', { nextStep: HELP });
    if (flags.note.trim() === '' || flags.note.length > 500) throw new UsageError('invalid_flag_value', '--note must be 1-500 characters and not blank.', { nextStep: HELP });
    const imagesBilled = flags['images-billed'] === undefined ? undefined : wholeNumberFlag(flags['images-billed'], '--images-billed', 1, 16);
    const resolution: Resolution = flags.settle
      ? { resolution: 'settle', note: flags.note, ...(imagesBilled === undefined ? {} : { images_billed: imagesBilled }) }
      : { resolution: 'release', note: flags.note };
    return resolveReconciliation({ connect: reconciliationConnector(process.env, flags.profile), executionId: args.execution_id, resolution });
  }

  protected override renderHuman(result: ReconciliationResolveResult, output: Output): void {
    renderReconciliationResolved(result, output);
  }
}
