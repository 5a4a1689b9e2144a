import { Flags } from '@oclif/core';
import { LexecCommand } from '../../../cli/lexec-command.js';
import { issueServerCertificate, SERVER_VALIDITY_DAYS, type TlsIssueResult } from '../../../launcher/tls/team-ca.js';
import { renderTlsIssue } from '../../../launcher/tls/render-tls.js';
import type { Output } from '../../../terminal/output.js';

export default class StackTlsIssue extends LexecCommand<TlsIssueResult> {
  static override summary = `Issue a server certificate and key signed by the team CA, one SAN per --host, valid ${SERVER_VALIDITY_DAYS} days.`;
  static override description =
    'Written under $LEXEC_HOME/tls/servers/<first host>/ (server.pem, server.key private 0600), replacing an earlier pair for that host: a running server reads the new pair on SIGHUP. Point the server\'s http.tls at them. Prints file paths, never key material. Details: docs/deployment.md.';
  static override examples = [
    '<%= config.bin %> <%= command.id %> --host ledger.team.internal --host 10.0.0.5',
    '<%= config.bin %> <%= command.id %> --host 127.0.0.1 --json',
  ];
  static override flags = {
    host: Flags.string({ summary: 'A DNS name or IP address clients use in the server\'s URL (repeatable).', multiple: true, required: true }),
  };

  protected override async execute(): Promise<TlsIssueResult> {
    const { flags } = await this.parse(StackTlsIssue);
    return issueServerCertificate({ env: process.env, hosts: flags.host });
  }

  protected override renderHuman(result: TlsIssueResult, output: Output): void {
    renderTlsIssue(result, output);
  }
}
