import type { Output } from '../../terminal/output.js';
import { plain } from '../../terminal/plain-text.js';
import type { EnrolResult } from './enrol-executor-host.js';

export function renderEnrolment(result: EnrolResult, output: Output): void {
  if (result.profile_created) output.line(`profile ${plain(result.profile)} created as an executor host of ${plain(result.ledger_url)}`);
  output.line(
    `${output.style.ok('✔')} profile ${plain(result.profile)} enrolled at ${plain(result.ledger_url)} as host ${plain(result.host_name)}: agent ${plain(result.agent.name)} (${plain(result.agent.agent_id)}), executor credential ${plain(result.executor_credential_id)}.`,
  );
  output.line(`Recorded in ${plain(result.enrolment_file)}. The token is spent: delete its file. Next: \`lexec stack start --profile ${plain(result.profile)}\`.`);
}
