import type { Output } from '../../terminal/output.js';
import { plain } from '../../terminal/plain-text.js';
import { table } from '../../terminal/table.js';
import type { EnrolmentIssueResult, EnrolmentListResult, EnrolmentRevokeResult } from './ledger-enrolments.js';

export function renderEnrolmentIssued(result: EnrolmentIssueResult, output: Output): void {
  const { enrolment } = result;
  output.line(`${output.style.ok('✔')} enrolment ${plain(enrolment.enrolment_id)} for host ${plain(enrolment.host_name)} (agent ${plain(enrolment.agent_name)}): token written to ${plain(result.token_file)} (0600), good once until ${plain(enrolment.expires_at)}.`);
  output.line('Move the file to the executor host privately and run `lexec stack enrol` there; delete it afterwards.');
}

export function renderEnrolments(result: EnrolmentListResult, output: Output): void {
  if (result.enrolments.length === 0) {
    output.line('No enrolments. `lexec ledger enrolments issue` issues one.');
    return;
  }
  const header = ['enrolment', 'host', 'agent', 'status', 'issued', 'expires', 'redeemed', 'executor credential'];
  const rows = result.enrolments.map((entry) =>
    [entry.enrolment_id, entry.host_name, entry.agent_name, entry.status, entry.issued_at, entry.expires_at, entry.redeemed_at ?? '', entry.executor_credential_id ?? ''].map(plain),
  );
  for (const line of table([header, ...rows])) output.line(line);
}

export function renderEnrolmentRevoked(result: EnrolmentRevokeResult, output: Output): void {
  if (result.changed) output.line(`${output.style.ok('✔')} enrolment ${plain(result.enrolment.enrolment_id)} revoked: its token is refused from now on.`);
  else output.line(`enrolment ${plain(result.enrolment.enrolment_id)} is ${plain(result.enrolment.status)}; nothing changed.`);
}
