import type { LedgerAgent, LedgerAuthorization, LedgerBudgetStanding, LedgerCredential, LedgerCredentialRevocation, LedgerPolicy } from '../wire/answers.js';
import type { BudgetSetResult, BudgetShowResult } from './ledger-budget.js';
import type { AddAgentResult, AgentSuspensionResult, ListAgentsResult } from './ledger-agents.js';
import { auditActionWords, auditActor, auditChange, type AuditResult } from './ledger-audit.js';
import type { AuthorizationListResult, AuthorizationRequestResult } from './ledger-authorizations.js';
import type { IssuedCredential, ListCredentialsResult, RotateCredentialResult } from './ledger-credentials.js';
import type { PolicyInitResult, PolicySetResult, PolicyShowResult } from './ledger-policy.js';
import { formatUnits } from '../../domain/money.js';
import type { Output } from '../../terminal/output.js';
import { plain } from '../../terminal/plain-text.js';
import { table } from '../../terminal/table.js';
import type { WebhookAddResult, WebhookDeliveriesResult, WebhookListResult, WebhookRemoveResult } from './ledger-webhooks.js';

/*
 * Human rendering of ledger records, shared by the ledger commands. Free text that came from the
 * ledger (an agent's purpose, names) is printed through `plain`: an agent must not be able to
 * write terminal escapes into an operator's terminal through a purpose string.
 */

function statusStyle(output: Output, status: string): string {
  if (status === 'approved' || status === 'settled') return output.style.ok(status);
  if (status === 'denied' || status === 'expired' || status === 'cancelled') return output.style.error(status);
  if (status === 'requested') return output.style.warn(status);
  return status;
}

export function renderAuthorization(authorization: LedgerAuthorization, output: Output): void {
  output.line(`${output.style.bold('authorization')} ${authorization.token_id}  ${statusStyle(output, authorization.status)}`);
  output.line(`  amount      ${formatUnits(authorization.amount_units, plain(authorization.currency))} (${authorization.amount_units.toString()} micro-units)`);
  output.line(`  agent       ${plain(authorization.agent_id)}`);
  if (authorization.purpose !== null) output.line(`  purpose     ${plain(authorization.purpose)}`);
  if (authorization.decided_by !== null) output.line(`  decided by  ${plain(authorization.decided_by)}`);
  if (authorization.decision_reason !== null) output.line(`  reason      ${plain(authorization.decision_reason)}`);
  output.line(`  created     ${authorization.created_at}`);
  output.line(`  expires     ${authorization.expires_at}`);
  if (authorization.execution_id !== null) output.line(`  execution   ${plain(authorization.execution_id)}`);
  if (authorization.settlement !== null) {
    output.line(`  settled     ${formatUnits(authorization.settlement.amount_units, plain(authorization.currency))} (receipt ${plain(authorization.settlement.receipt_id)})`);
  }
  if (authorization.release !== null) output.line(`  released    ${plain(authorization.release.reason)}`);
  if (authorization.cancellation !== null) output.line(`  cancelled   ${plain(authorization.cancellation.reason)} (${authorization.cancellation.cancelled_at}); nothing is held`);
  if (authorization.status === 'requested') output.line(output.style.dim('  awaits an approver: lexec ledger authorizations approve|deny <token_id>'));
}

/** `ledger authorizations request`: the authorization, first saying when it is the open one the idempotency key opened earlier. */
export function renderAuthorizationRequest(result: AuthorizationRequestResult, output: Output): void {
  if (result.replayed) output.line(output.style.warn(`the idempotency key names this open authorization, requested at ${result.authorization.created_at}: nothing new was requested`));
  renderAuthorization(result.authorization, output);
}

export function renderAuthorizationRow(authorization: LedgerAuthorization, output: Output): void {
  const amount = formatUnits(authorization.amount_units, plain(authorization.currency)).padStart(18);
  // The approver's reason, when one was given, ends the row: why it was approved or denied.
  const reason = authorization.decision_reason === null ? '' : `  reason: ${plain(authorization.decision_reason)}`;
  output.line(`${authorization.token_id}  ${statusStyle(output, authorization.status.padEnd(9))}  ${amount}  ${plain(authorization.agent_id)}  ${authorization.created_at}${reason}`);
}

/** One request waiting for an approver: what, for whom, why, and the threshold it is above. */
function renderApproval(authorization: LedgerAuthorization, output: Output): void {
  const currency = plain(authorization.currency);
  const amount = formatUnits(authorization.amount_units, currency).padStart(18);
  output.line(`${authorization.token_id}  ${amount}  ${plain(authorization.agent_id)}  requested ${authorization.created_at}  expires ${authorization.expires_at}`);
  if (authorization.purpose !== null) output.line(`  purpose  ${plain(authorization.purpose)}`);
  const { policy } = authorization;
  if (policy !== null) {
    const version = policy.version === null ? '' : ` (policy version ${policy.version.toString()})`;
    output.line(`  above the approval threshold of ${formatUnits(policy.approval_threshold_units, currency)}${version}`);
  }
}

export function renderAgent(agent: LedgerAgent, output: Output): void {
  // An automatic suspension says so: the operator did not ask for it, the agent's policy did.
  const automatic = agent.suspended_by === 'velocity_breaker' ? ' (automatic: velocity breaker)' : '';
  const status = agent.status === 'suspended' ? output.style.warn(`suspended${automatic}`) : plain(agent.status);
  const since = agent.suspended_at === null ? '' : `  since ${agent.suspended_at}${agent.suspension_reason === null ? '' : ` (${plain(agent.suspension_reason)})`}`;
  output.line(`${plain(agent.agent_id)}  ${plain(agent.name)}  ${status}  ${agent.created_at}${since}`);
}

export function renderAgentSuspension(result: AgentSuspensionResult, output: Output): void {
  const agent = `agent ${plain(result.agent_id)} (${plain(result.name)})`;
  if (result.status === 'suspended') {
    const reason = result.suspension_reason === null ? '' : ` (reason: ${plain(result.suspension_reason)})`;
    const by = result.suspended_by === 'velocity_breaker' ? ' automatically by its velocity breaker' : '';
    output.line(result.changed ? `${output.style.ok('✔')} ${agent} suspended${reason}.` : `${agent} was already suspended${by} since ${result.suspended_at ?? '?'}${reason}; nothing changed.`);
    const cancelled = result.cancelled_authorizations;
    if (result.changed) output.line(`  ${cancelled} unclaimed authorization${cancelled === 1 ? '' : 's'} cancelled (holds freed); its new spend requests are refused.`);
    output.line('  Executions already under way finish and settle as usual.');
    output.line(output.style.dim(`  resume it with: lexec ledger agents resume --agent-id ${plain(result.agent_id)}`));
    return;
  }
  output.line(result.changed ? `${output.style.ok('✔')} ${agent} resumed: it may request spend again.` : `${agent} is active; nothing changed.`);
  if (result.changed) output.line('  Authorizations cancelled by the suspension stay cancelled; it requests new ones.');
}

export function renderCredential(credential: IssuedCredential, output: Output): void {
  const owner = credential.agent_id === null ? '' : ` for agent ${credential.agent_id}`;
  const holder = credential.holder_name === null ? '' : ` held by ${plain(credential.holder_name)}`;
  output.line(`${output.style.ok('✔')} ${credential.kind} credential ${credential.credential_id}${owner}${holder} ${credential.outcome === 'created' ? 'registered' : 'already registered'}.`);
  output.line(`  capability written to ${credential.credential_file} (mode 0600); keep it private.`);
}

/** One credential per line: id, kind, whose, status, created and last used (never a capability). */
export function renderCredentialList(result: ListCredentialsResult, output: Output): void {
  if (result.credentials.length === 0) output.line('No credentials match.');
  for (const credential of result.credentials) renderCredentialRow(credential, output);
}

function credentialStatus(credential: LedgerCredential, output: Output): string {
  if (credential.status === 'active') return output.style.ok('active');
  if (credential.status === 'expiring') return output.style.warn(`expiring at ${credential.expires_at ?? '?'}`);
  return output.style.error(`revoked at ${credential.revoked_at ?? '?'}`);
}

function renderCredentialRow(credential: LedgerCredential, output: Output): void {
  const whose = [credential.agent_id === null ? null : `agent ${plain(credential.agent_id)}`, credential.holder_name === null ? null : `held by ${plain(credential.holder_name)}`]
    .filter((part) => part !== null)
    .join(', ');
  output.line(`${output.style.bold(plain(credential.credential_id))}  ${credential.kind}${whose === '' ? '' : ` (${whose})`}  ${credentialStatus(credential, output)}`);
  const used = credential.last_used_at === null ? 'never used (as far as recorded)' : `last used ${credential.last_used_at.slice(0, 16)}Z`;
  const line = [`created ${credential.created_at}`, used];
  if (credential.rotated_from !== null) line.push(`rotated from ${plain(credential.rotated_from)}`);
  if (credential.replaced_by !== null) line.push(`replaced by ${plain(credential.replaced_by)}`);
  output.line(`  ${line.join(' · ')}`);
}

export function renderCredentialRevocation(result: LedgerCredentialRevocation, output: Output): void {
  const { credential } = result;
  if (result.changed) {
    output.line(`${output.style.ok('✔')} ${credential.kind} credential ${plain(credential.credential_id)} revoked: the ledger refuses its capability from now on.`);
  } else {
    output.line(`${credential.kind} credential ${plain(credential.credential_id)} was already revoked at ${credential.revoked_at ?? '?'}; nothing changed.`);
  }
}

export function renderCredentialRotation(result: RotateCredentialResult, output: Output): void {
  const { credential, replaced } = result;
  const verb = result.outcome === 'created' ? 'rotated' : 'was already rotated';
  output.line(`${output.style.ok('✔')} ${credential.kind} credential ${plain(replaced.credential_id)} ${verb}: the new one is ${plain(credential.credential_id)}.`);
  output.line(`  new capability written to ${result.credential_file} (mode 0600); keep it private.`);
  output.line(
    replaced.status === 'expiring'
      ? `  the old capability keeps working until ${replaced.expires_at ?? '?'}, then it is refused.`
      : '  the old capability is refused from now on.',
  );
}

export function renderPolicy(policy: LedgerPolicy, output: Output): void {
  const currency = plain(policy.currency);
  output.line(`${output.style.bold('spend policy')} of ${plain(policy.agent_id)} (version ${policy.version.toString()}, updated ${policy.updated_at})`);
  output.line(`  per authorization   ${formatUnits(policy.per_authorization_cap_units, currency)}`);
  output.line(`  daily (rolling 24h) ${formatUnits(policy.daily_cap_units, currency)}`);
  output.line(`  approval above      ${formatUnits(policy.approval_threshold_units, currency)}`);
  // The runaway-loop breaker, only when set (a policy without it reads as before it existed).
  if (policy.max_requests_per_minute !== null) output.line(`  requests per minute at most ${policy.max_requests_per_minute.toString()}`);
  if (policy.max_requests_per_hour !== null) output.line(`  requests per hour   at most ${policy.max_requests_per_hour.toString()}`);
  if (policy.suspend_after_velocity_refusals !== null) {
    output.line(`  suspend after       ${policy.suspend_after_velocity_refusals.toString()} velocity refusals in the rolling hour`);
  }
  output.line(
    policy.source === 'default'
      ? '  source              the default policy of the stack\'s configuration ([ledger.default_policy]; a change applies at the next start)'
      : '  source              set for this agent (`lexec ledger policy set`); changes of the default policy do not apply',
  );
}

export function renderAgentAdded(result: AddAgentResult, output: Output): void {
  output.line(`${output.style.ok('✔')} agent added:`);
  renderAgent(result.agent, output);
  if (result.credential !== null) renderCredential(result.credential, output);
}

export function renderAgentList(result: ListAgentsResult, output: Output): void {
  if (result.agents.length === 0) output.line('No agents yet (add one with `lexec ledger agents add`).');
  for (const agent of result.agents) renderAgent(agent, output);
}

export function renderAuthorizationList(result: AuthorizationListResult, output: Output): void {
  if (result.authorizations.length === 0) output.line('No authorizations match.');
  for (const authorization of result.authorizations) renderAuthorizationRow(authorization, output);
}

export function renderApprovalList(result: AuthorizationListResult, output: Output): void {
  if (result.authorizations.length === 0) {
    output.line('No requests await a decision.');
    return;
  }
  for (const authorization of result.authorizations) renderApproval(authorization, output);
  output.line(output.style.dim('decide: lexec ledger authorizations approve|deny <token_id> [--reason <text>]'));
}

export function renderPolicyInit(result: PolicyInitResult, output: Output): void {
  const { policy } = result;
  output.line(`${output.style.ok('✔')} starter policy written to ${result.policy_file}`);
  output.line(`  per authorization   ${formatUnits(BigInt(policy.per_authorization_cap_units), policy.currency)}`);
  output.line(`  daily (rolling 24h) ${formatUnits(BigInt(policy.daily_cap_units), policy.currency)}`);
  output.line(`  approval above      ${formatUnits(BigInt(policy.approval_threshold_units), policy.currency)}`);
  output.line(output.style.dim('  edit it, then: lexec ledger policy set --agent-id <id> --file <path>'));
}

export function renderPolicySet(result: PolicySetResult, output: Output): void {
  const from = result.expected_version === null ? '' : ` (it was at version ${result.expected_version.toString()}, as expected)`;
  output.line(`${output.style.ok('✔')} policy set from ${result.policy_file}${from}`);
  renderPolicy(result.policy, output);
}

export function renderPolicyShown(result: PolicyShowResult, output: Output): void {
  renderPolicy(result.policy, output);
  renderBudgetStanding(result.budgets, plain(result.policy.currency), output, result.time_zone);
  if (result.exported_to !== null) output.line(`${output.style.ok('✔')} exported to ${result.exported_to}`);
  // How to change it without overwriting a change someone else makes meanwhile.
  output.line(output.style.dim(`  change it only if still at this version: lexec ledger policy set --file <path> --expect-version ${result.policy.version.toString()}`));
}

/** Each calendar budget's standing in its current period (docs/ledger.md "Budgets"); nothing when none is set. */
export function renderBudgetStanding(budgets: readonly LedgerBudgetStanding[], currency: string, output: Output, timeZone: string | null): void {
  if (budgets.length === 0) return;
  output.line(`${output.style.bold('budgets')} (calendar periods in ${plain(timeZone ?? 'UTC')}; spent is settled, held is live holds and claims)`);
  const rows = budgets.map((budget) =>
    [budget.name, `${budget.period_start} → ${budget.period_end}`, formatUnits(budget.limit_units, currency), formatUnits(budget.spent_units, currency), formatUnits(budget.held_units, currency), formatUnits(budget.remaining_units, currency), budget.alert_percentages.join(',')].map(plain),
  );
  for (const line of table([['budget', 'period', 'limit', 'spent', 'held', 'remaining', 'alerts at %'], ...rows])) output.line(line);
}

/** `lexec ledger budget show|set`: the installation budget, its standing, and how to change it safely. */
export function renderInstallationBudget(result: BudgetShowResult | BudgetSetResult, output: Output): void {
  const { budget } = result;
  if ('expected_version' in result) output.line(`${output.style.ok('✔')} installation budget set (from version ${result.expected_version.toString()})`);
  const currency = plain(budget.currency);
  const amount = (units: bigint | null) => (units === null ? 'none' : formatUnits(units, currency));
  output.line(`${output.style.bold('installation budget')} across all agents (version ${budget.version.toString()}, updated ${budget.updated_at}, time zone ${plain(budget.time_zone)})`);
  output.line(`  day     ${amount(budget.day_budget_units)}`);
  output.line(`  week    ${amount(budget.week_budget_units)}`);
  output.line(`  month   ${amount(budget.month_budget_units)}`);
  output.line(`  alerts  at ${budget.alert_percentages.join(', ')} % of each`);
  renderBudgetStanding(result.standing, currency, output, budget.time_zone);
  output.line(output.style.dim(`  change it only if still at this version: lexec ledger budget set --month-units <units> --expect-version ${budget.version.toString()}`));
}

/** The audit trail as a table, oldest first; every cell from the ledger made safe for a terminal. */
export function renderAudit(result: AuditResult, output: Output): void {
  if (result.events.length === 0) {
    output.line('No operator actions recorded for this query.');
    return;
  }
  const header = ['#', 'when', 'who', 'action', 'agent', 'subject', 'change', 'reason'];
  const rows = result.events.map((event) =>
    [event.audit_id, event.at, auditActor(event), auditActionWords(event.action), event.agent_id ?? '—', event.subject_id, auditChange(event), event.reason ?? ''].map(plain),
  );
  for (const line of table([header, ...rows])) output.line(line);
  if (result.next_after !== null) output.line(output.style.dim(`  more: run it again with --after ${plain(result.next_after)} (and the same filters)`));
}

export function renderWebhookSinks(result: WebhookListResult, output: Output): void {
  if (result.sinks.length === 0) {
    output.line('No webhook sinks. `lexec ledger webhooks add` adds one.');
    return;
  }
  const header = ['sink', 'url', 'format', 'events', 'delivered', 'pending', 'failed', 'since event', 'removed'];
  const rows = result.sinks.map((sink) =>
    [
      sink.sink_id,
      sink.url,
      sink.format,
      sink.events === null ? 'all' : sink.events.join(','),
      String(sink.deliveries.delivered),
      String(sink.deliveries.pending),
      String(sink.deliveries.failed),
      sink.cursor_event_id,
      sink.removed_at ?? '',
    ].map(plain),
  );
  for (const line of table([header, ...rows])) output.line(line);
}

export function renderWebhookAdded(result: WebhookAddResult, output: Output): void {
  const { sink } = result;
  output.line(`${output.style.ok('✔')} webhook sink ${plain(sink.sink_id)} added: ${plain(sink.format)} events (${plain(sink.events === null ? 'all types' : sink.events.join(', '))}) to ${plain(sink.url)}.`);
  output.line(`  events after ${plain(sink.cursor_event_id)} are delivered, signed with the secret in ${plain(sink.secret_file)} (read at each delivery).`);
}

export function renderWebhookRemoval(result: WebhookRemoveResult, output: Output): void {
  if (result.changed) output.line(`${output.style.ok('✔')} webhook sink ${plain(result.sink.sink_id)} removed: nothing more is delivered to it.`);
  else output.line(`webhook sink ${plain(result.sink.sink_id)} was already removed at ${plain(result.sink.removed_at ?? '?')}; nothing changed.`);
}

export function renderWebhookDeliveries(result: WebhookDeliveriesResult, output: Output): void {
  if (result.deliveries.length === 0) {
    output.line('No webhook deliveries for this query.');
    return;
  }
  const header = ['event', 'type', 'sink', 'status', 'attempts', 'last answer', 'next attempt', 'delivered'];
  const rows = result.deliveries.map((delivery) =>
    [
      delivery.event_id,
      delivery.event_type,
      delivery.sink_id,
      delivery.status,
      String(delivery.attempts),
      delivery.last_http_status === null ? (delivery.last_error ?? '—') : `HTTP ${String(delivery.last_http_status)}`,
      delivery.next_attempt_at ?? '—',
      delivery.delivered_at ?? '—',
    ].map(plain),
  );
  for (const line of table([header, ...rows])) output.line(line);
}
