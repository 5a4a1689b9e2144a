import type { Output } from '../../terminal/output.js';
import type { TlsInitResult, TlsIssueResult } from './team-ca.js';

/** `stack tls init`: where the CA is; never key material. */
export function renderTlsInit(result: TlsInitResult, output: Output): void {
  output.line(`${result.replaced ? 'Replaced the team CA' : 'Made the team CA'} ${result.subject} (serial ${result.serial_number}, valid to ${result.valid_to}).`);
  output.line(`  certificate  ${result.ca_certificate_file}   copy it to every client host (ca_file, --ca-file)`);
  output.line(`  key          ${result.ca_key_file}   private (0600); it stays on this host`);
  output.line('Next: lexec stack tls issue --host <name or IP of a server>');
}

/** `stack tls issue`: where the pair is; never key material. */
export function renderTlsIssue(result: TlsIssueResult, output: Output): void {
  output.line(`Issued a server certificate for ${result.hosts.map((host) => host.value).join(', ')} (serial ${result.serial_number}, valid to ${result.valid_to}).`);
  output.line(`  certificate  ${result.certificate_file}`);
  output.line(`  key          ${result.key_file}   private (0600)`);
  output.line(`Set http.tls = { certificate_file, key_file } in the server's configuration to these paths; clients trust ${result.ca_certificate_file}.`);
  output.line('A running server reads a renewed pair on SIGHUP.');
}
