import { Flags } from '@oclif/core';
import { LexecCommand } from '../../../cli/lexec-command.js';
import { initTeamCa, type TlsInitResult } from '../../../launcher/tls/team-ca.js';
import { renderTlsInit } from '../../../launcher/tls/render-tls.js';
import type { Output } from '../../../terminal/output.js';

export default class StackTlsInit extends LexecCommand<TlsInitResult> {
  static override summary = "Make the team's private CA (ECDSA P-256) under $LEXEC_HOME/tls/ca: ca.pem for clients, ca.key private (0600).";
  static override description =
    'Clients (ledger verbs, `lexec run`, `lexec agent mcp`, the executor\'s ledger gateway) verify lexec servers against ca.pem (`ca_file`, `--ca-file`); `lexec stack tls issue` signs server certificates with ca.key. An existing CA is kept unless --force. Prints file paths, never key material. Details: docs/deployment.md.';
  static override examples = ['<%= config.bin %> <%= command.id %>', '<%= config.bin %> <%= command.id %> --json'];
  static override flags = {
    force: Flags.boolean({ summary: 'Replace an existing team CA: every certificate it signed stops being trusted by clients given the new ca.pem.' }),
  };

  protected override async execute(): Promise<TlsInitResult> {
    const { flags } = await this.parse(StackTlsInit);
    return initTeamCa({ env: process.env, force: flags.force });
  }

  protected override renderHuman(result: TlsInitResult, output: Output): void {
    renderTlsInit(result, output);
  }
}
