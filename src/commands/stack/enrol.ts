import { Flags } from '@oclif/core';
import { LexecCommand } from '../../cli/lexec-command.js';
import { profileFlags } from '../../cli/profile-flags.js';
import type { Output } from '../../terminal/output.js';
import { enrolExecutorHost, type EnrolResult } from '../../launcher/enrolment/enrol-executor-host.js';
import { renderEnrolment } from '../../launcher/enrolment/render-enrol.js';

export default class StackEnrol extends LexecCommand<EnrolResult> {
  static override summary = "Enrol this executor host at its remote ledger with a one-time token from the ledger host's operator.";
  static override description =
    'Checks the remote ledger is of this lexec build\'s lineage, then redeems the token once: this host generates its executor→ledger and agent capabilities, keeps them in the profile\'s private state and sends the ledger only their digests. The ledger\'s admin capability never leaves the ledger host. A profile that does not exist is created as a sandbox executor host of --ledger-url (its [agent].name is the profile\'s name). docs/deployment.md "Enrolment".';
  static override examples = [
    '<%= config.bin %> <%= command.id %> --profile builder-1 --ledger-url https://ledger.example:7400 --ca-file /etc/lexec/ca.pem --token-file /root/builder-1.enrolment',
    '<%= config.bin %> <%= command.id %> --profile builder-1 --token-file /root/builder-1.enrolment --json',
  ];
  static override flags = {
    ...profileFlags,
    'token-file': Flags.string({ required: true, summary: 'Absolute path of the token file `lexec ledger enrolments issue` wrote (0600).' }),
    'ledger-url': Flags.string({ summary: "The ledger host's URL (https; http only on loopback). Required to create the profile; must match its [ledger] url otherwise." }),
    'ca-file': Flags.string({ summary: 'Absolute path of the team CA certificate (PEM) for an https ledger; must match [ledger] ca_file of an existing profile.' }),
  };

  protected override async execute(): Promise<EnrolResult> {
    const { flags } = await this.parse(StackEnrol);
    return enrolExecutorHost({ env: process.env, profileFlag: flags.profile, tokenFile: flags['token-file'], ledgerUrl: flags['ledger-url'], caFile: flags['ca-file'] });
  }

  protected override renderHuman(result: EnrolResult, output: Output): void {
    renderEnrolment(result, output);
  }
}
