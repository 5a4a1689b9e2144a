import type { ReconciliationList, ReconciliationResolveResult } from './executor-reconciliation.js';
import { formatUnits } from '../../domain/money.js';
import type { Output } from '../../terminal/output.js';
import { plain } from '../../terminal/plain-text.js';

/** Human text of `lexec executor reconciliation list`. */
export function renderReconciliationList(result: ReconciliationList, output: Output): void {
  if (result.executions.length === 0) {
    output.line(`No execution of profile ${result.profile} awaits a human.`);
    return;
  }
  output.line(`${output.style.warn(String(result.executions.length))} execution${result.executions.length === 1 ? '' : 's'} of profile ${result.profile} await${result.executions.length === 1 ? 's' : ''} a human:`);
  for (const execution of result.executions) {
    output.line(`${output.style.bold(execution.execution_id)}  ${plain(execution.state_reason ?? 'no reason recorded')}`);
    output.line(`  target ${plain(execution.target_id)}; authorization ${plain(execution.authorization.spend_auth_token_id)} holds ${formatUnits(execution.authorization.held_units, plain(execution.authorization.currency))}`);
    for (const attempt of execution.evidence) {
      const delivered = attempt.delivered_images === null ? '' : `, ${String(attempt.delivered_images)} image(s) delivered`;
      output.line(`  attempt ${plain(attempt.attempt_id)}: ${plain(attempt.state)}${attempt.outcome_code === null ? '' : ` (${plain(attempt.outcome_code)})`}, provider request ${plain(attempt.provider_request_id ?? 'none')}${delivered}`);
      const window = attempt.submit_window;
      if (window !== undefined) output.line(`    submitted between ${plain(window.from)} and ${plain(window.until ?? 'now (still in flight)')}`);
      const correlation = attempt.correlation;
      if (correlation?.sent === false) output.line(`    the request carried no ${plain(correlation.field)} (its target sends none): find it at the provider by its submit window`);
      else if (correlation !== undefined) output.line(`    the request's ${plain(correlation.field)} is ${String(correlation.value)} (in its input and result at the provider)`);
    }
    output.line(`  ${plain(execution.recommended_action.description)}`);
  }
  output.line(output.style.dim('Resolve one: lexec executor reconciliation resolve <execution_id> --settle [--images-billed N] | --release --note "why"'));
}

/** Human text of `lexec executor reconciliation resolve`. */
export function renderReconciliationResolved(result: ReconciliationResolveResult, output: Output): void {
  const what = result.resolution.resolution === 'settled' ? `settled${result.resolution.amount_units === null ? '' : ` for ${formatUnits(result.resolution.amount_units, 'USD')}`}` : 'released (no charge)';
  output.line(`${output.style.ok('✔')} execution ${result.execution.execution_id} ${what}${result.replayed ? ' (already resolved this way)' : ''}: now ${plain(result.execution.state)}`);
}
