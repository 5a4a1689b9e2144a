import { Flags } from '@oclif/core';
import { agentIdFlag, sinceFlag, wholeNumberFlag } from '../../cli/flag-values.js';
import { LexecCommand } from '../../cli/lexec-command.js';
import { ledgerTarget, ledgerTargetFlags } from '../../cli/ledger-flags.js';
import type { Output } from '../../terminal/output.js';
import { renderAudit } from '../../ledger/client/render-ledger.js';
import { readLedgerAudit, type AuditResult } from '../../ledger/client/ledger-audit.js';

export default class LedgerAudit extends LexecCommand<AuditResult> {
  static override summary = 'Show the audit trail of operator actions, oldest first (admin token).';
  static override description =
    'Every suspension and resumption, policy change, approval and denial, reconciliation resolved, agent added and credential registered — by whom (credential kind and id, or the ledger itself), when, and what it changed. One page at a time: --after continues where the previous page ended.';
  static override examples = [
    '<%= config.bin %> <%= command.id %> --since 24h',
    '<%= config.bin %> <%= command.id %> --since 2026-11-25T10:00:00Z --agent-id agt_0b7e6c1a-2f4d-4c8e-9a51-3d2f8e7c6b10 --json',
    '<%= config.bin %> <%= command.id %> --url http://127.0.0.1:7400 --token-file /var/lib/lexec/ledger-credentials/admin.capability --after 100',
  ];
  static override flags = {
    ...ledgerTargetFlags,
    since: Flags.string({ summary: 'Only actions from this time on: a duration back from now (30s, 15m, 2h, 7d) or an ISO 8601 time.' }),
    'agent-id': Flags.string({ summary: "Only actions on this agent, its authorizations and its credentials." }),
    limit: Flags.string({ summary: 'At most this many (1-500; the ledger defaults to 100).' }),
    after: Flags.string({ summary: 'Only actions after this audit id (the `next_after` of the previous page).' }),
  };

  protected override async execute(): Promise<AuditResult> {
    const { flags } = await this.parse(LedgerAudit);
    return readLedgerAudit({
      target: ledgerTarget(flags),
      since: flags.since === undefined ? null : sinceFlag(flags.since, Date.now()),
      agentId: flags['agent-id'] === undefined ? null : agentIdFlag(flags['agent-id']),
      limit: flags.limit === undefined ? null : wholeNumberFlag(flags.limit, '--limit', 1, 500),
      after: flags.after === undefined ? null : String(wholeNumberFlag(flags.after, '--after', 0, 999_999_999)),
    });
  }

  protected override renderHuman(result: AuditResult, output: Output): void {
    renderAudit(result, output);
  }
}
