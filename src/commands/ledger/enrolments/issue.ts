import { Flags } from '@oclif/core';
import { LexecCommand } from '../../../cli/lexec-command.js';
import { wholeNumberFlag } from '../../../cli/flag-values.js';
import { ledgerTarget, ledgerTargetFlags } from '../../../cli/ledger-flags.js';
import { profileFlags } from '../../../cli/profile-flags.js';
import type { Output } from '../../../terminal/output.js';
import { issueEnrolment, type EnrolmentIssueResult } from '../../../ledger/client/ledger-enrolments.js';
import { renderEnrolmentIssued } from '../../../ledger/client/render-enrolments.js';
import { DEFAULT_ENROLMENT_TTL_MINUTES, MAX_ENROLMENT_TTL_MINUTES } from '../../../ledger/executor-enrolments.js';

export default class LedgerEnrolmentsIssue extends LexecCommand<EnrolmentIssueResult> {
  static override summary = 'Issue a one-time enrolment token for an executor host; written to a new 0600 file (admin token).';
  static override description =
    'Run on the ledger host. The executor host redeems the token once with `lexec stack enrol` and gets its own executor and agent credentials; the ledger admin capability never leaves this host. Prints only where the token is and when it expires (docs/deployment.md "Enrolment").';
  static override examples = ['<%= config.bin %> <%= command.id %> --name builder-1 --token-file /root/builder-1.enrolment --ttl-minutes 30'];
  // --token-file names the NEW file the enrolment token is written to; manual mode presents the
  // admin capability from --admin-token-file instead (the other ledger verbs' --token-file).
  static override flags = {
    ...profileFlags,
    url: ledgerTargetFlags.url,
    'admin-token-file': Flags.string({ summary: 'Manual mode (with --url): absolute path of the private (0600) file holding the ledger admin capability.', helpGroup: 'GLOBAL' }),
    name: Flags.string({ required: true, summary: 'The executor host\'s name (1-63 lower-case letters, digits, -); part of its credential ids.' }),
    agent: Flags.string({ summary: "The agent the host spends as (its profile's [agent].name); default: the host's name." }),
    'token-file': Flags.string({ required: true, summary: 'Absolute path of a NEW file to write the token to (0600).' }),
    'ttl-minutes': Flags.string({ summary: `How long the token is good for, 1-${MAX_ENROLMENT_TTL_MINUTES} minutes (default ${DEFAULT_ENROLMENT_TTL_MINUTES}).` }),
  };

  protected override async execute(): Promise<EnrolmentIssueResult> {
    const { flags } = await this.parse(LedgerEnrolmentsIssue);
    const ttl = flags['ttl-minutes'] === undefined ? DEFAULT_ENROLMENT_TTL_MINUTES : wholeNumberFlag(flags['ttl-minutes'], '--ttl-minutes', 1, MAX_ENROLMENT_TTL_MINUTES);
    const target = ledgerTarget({ profile: flags.profile, url: flags.url, 'token-file': flags['admin-token-file'] });
    return issueEnrolment({ target, hostName: flags.name, agentName: flags.agent ?? null, tokenFile: flags['token-file'], ttlMinutes: ttl });
  }

  protected override renderHuman(result: EnrolmentIssueResult, output: Output): void {
    renderEnrolmentIssued(result, output);
  }
}
