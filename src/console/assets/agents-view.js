// The Agents and policies view (docs/console.md): suspend or resume an agent, edit its policy.
import { ConsoleError, HELD_NOW_MEANS, act, dash, getJson, h, heldNowHeader, main, outcome, postJson, standingTable, table, time } from './console-util.js';

export async function agents() {
  const data = await getJson('/api/agents');
  const rows = data.agents.map((agent) =>
    h(
      'tr',
      {},
      h('td', {}, agent.name, h('br'), h('code', { class: 'muted' }, agent.agent_id)),
      h('td', {}, agent.status),
      h('td', { class: 'amount' }, agent.policy.per_authorization_cap.display),
      h('td', { class: 'amount' }, agent.policy.daily_cap.display),
      h('td', { class: 'amount' }, agent.policy.approval_threshold.display),
      h('td', { class: 'amount' }, agent.spent.display),
      h('td', { class: 'amount' }, agent.held.display),
      h('td', { class: 'amount' }, agent.remaining.display),
      h('td', {}, `${agent.policy.source} v${agent.policy.version}`),
    ),
  );
  return [
    h('h1', {}, 'Agents and policies'),
    table(['Agent', 'Status', 'Per authorization', 'Daily cap', 'Approval above', 'Spent (24 h)', heldNowHeader(), 'Remaining', 'Policy'], rows, 'No agents.'),
    h('p', { class: 'muted', id: 'held-now-means' }, HELD_NOW_MEANS),
    installationBudgetCard(data.installation_budget),
    data.agents.map(agentCard),
  ];
}

const INSTALLATION_FIELDS = [
  ['day_budget_units', 'Day budget', (budget) => budget.day?.units ?? ''],
  ['week_budget_units', 'Week budget', (budget) => budget.week?.units ?? ''],
  ['month_budget_units', 'Month budget', (budget) => budget.month?.units ?? ''],
  ['alert_percentages', 'Alerts at (%)', (budget) => budget.alert_percentages.join(', '), 'text'],
];

/**
 * The installation-wide budget across all agents (`lexec ledger budget show|set`): its standing,
 * then a form saved only if the budget is still at the version the page showed.
 */
function installationBudgetCard(budget) {
  return h(
    'section',
    { class: 'card', id: 'installation-budget' },
    h('h2', {}, 'Installation budget (all agents)'),
    standingTable(budget.standing, budget.time_zone, 'No installation budget: each agent is limited by its own policy only.'),
    h('p', { class: 'muted' }, `Periods in ${budget.time_zone} (the installation's time zone). What all agents spent and hold in the period counts; a request that would pass it is refused.`),
    h('p', { class: 'muted' }, 'Amounts in micro-units (1 USD = 1000000); an empty budget means none, empty alerts mean 50, 80, 100. Saved only if the budget is still at the version it had when you opened this page.'),
    versionedForm({
      key: 'installation-budget',
      nameOf: (name) => `installation-${name}`,
      versionName: 'installation-budget-version',
      groups: [INSTALLATION_FIELDS],
      current: budget,
      path: '/api/installation-budget',
      answerOf: (result) => result.installation_budget,
      saved: (saved) => `Saved: the installation budget is at version ${saved.version}.`,
      stale: (version) => `Nothing was saved: someone changed the installation budget since you opened it (it is at version ${version} now). Press “Load current values”, make your change on top of them, and save again.`,
      saveLabel: 'Save installation budget',
    }),
  );
}

/**
 * A form of exact values saved only from the version it showed (`expect_version`): a change someone
 * made meanwhile is refused with the version it is at now, never overwritten; "Load current values"
 * puts back what this render showed. `groups` are lines of [name, label, value(record), inputmode?].
 */
function versionedForm({ key, nameOf, versionName, groups, current, path, answerOf, saved, stale, saveLabel }) {
  const out = outcome(key);
  const fields = groups.flat();
  const field = (name) => main.querySelector(`[name="${name}"]`);
  const load = (record) => {
    for (const [name, , value] of fields) field(nameOf(name)).value = value(record);
    field(versionName).value = record.version;
  };
  const save = () => {
    const body = Object.fromEntries(fields.map(([name]) => [name, field(nameOf(name))?.value.trim() ?? '']));
    body.expect_version = field(versionName)?.value ?? current.version;
    void act(
      out,
      () =>
        postJson(path, body).catch((error) => {
          if (error instanceof ConsoleError && error.currentVersion !== null) error.message = stale(error.currentVersion);
          throw error;
        }),
      (result) => {
        load(answerOf(result));
        return saved(answerOf(result));
      },
    );
  };
  const input = ([name, label, value, inputmode = 'numeric']) => [h('label', {}, `${label}: `, h('input', { type: 'text', inputmode, name: nameOf(name), value: value(current), size: 12 })), ' '];
  return [
    groups.map((group, index) => h('p', {}, group.map(input), index === groups.length - 1 ? h('input', { type: 'hidden', name: versionName, value: current.version }) : null)),
    h('p', { class: 'actions' }, h('button', { type: 'button', onclick: save }, saveLabel), ' ', h('button', { type: 'button', onclick: () => { load(current); out.textContent = ''; } }, 'Load current values')),
    out,
  ];
}

/** An agent's switch: suspend it (new requests refused, unclaimed authorizations cancelled; executions under way finish) or resume it. */
function suspensionControls(agent) {
  const id = agent.agent_id;
  const out = outcome(`suspension-${id}`);
  const said = (result, verb) =>
    result.changed
      ? `${result.name} ${verb}${result.cancelled_authorizations > 0 ? `; ${result.cancelled_authorizations} unclaimed authorization${result.cancelled_authorizations === 1 ? '' : 's'} cancelled (holds freed)` : ''}.`
      : `${result.name} was already ${result.status}: nothing changed.`;
  if (agent.status === 'suspended') {
    return [
      h('p', { class: 'suspended' }, h('strong', {}, 'Suspended'), ` since ${time(agent.suspended_at)}`, agent.suspension_reason === null ? '' : ` — ${agent.suspension_reason}`, '. Its spend requests are refused.'),
      h('p', { class: 'actions' }, h('button', { type: 'button', onclick: () => void act(out, () => postJson(`/api/agents/${id}/resume`, {}), (result) => said(result, 'resumed: it may request again')) }, 'Resume')),
      out,
    ];
  }
  const reasonName = `suspend-reason-${id}`;
  const suspend = () => {
    const reason = main.querySelector(`[name="${reasonName}"]`)?.value ?? '';
    void act(out, () => postJson(`/api/agents/${id}/suspend`, reason === '' ? {} : { reason }), (result) => said(result, 'suspended: its new requests are refused, executions under way finish'));
  };
  return [
    h('p', {}, 'Active. Suspending refuses its new spend requests at once and cancels its requested and approved authorizations not yet claimed; executions already under way finish and settle.'),
    h('p', {}, h('label', {}, 'Reason (optional): ', h('input', { type: 'text', name: reasonName, maxlength: 500 })), ' ', h('button', { type: 'button', class: 'deny', onclick: suspend }, 'Suspend')),
    out,
  ];
}

/** The requests the ledger refused this agent lately (policy, velocity, suspension), newest first: not only a log line. */
function refusalsTable(agent) {
  const rows = agent.refusals.map((event) =>
    h(
      'tr',
      { 'data-event-id': event.event_id },
      h('td', {}, time(event.at)),
      h('td', {}, h('code', {}, dash(event.details.reason))),
      h('td', {}, dash(event.details.limit)),
      h('td', { class: 'amount' }, event.amount === null ? '—' : event.amount.display),
      h('td', {}, dash(event.target_id)),
      // The ledger writes one refusal a minute per agent and reason; the others it counted.
      h('td', { class: 'amount' }, typeof event.details.repeated === 'number' ? `${event.details.repeated} more` : '—'),
    ),
  );
  return h(
    'div',
    { class: 'refusals' },
    h('h3', {}, 'Refused requests'),
    table(['When', 'Reason', 'Limit', 'Amount', 'Target', 'Since the one before'], rows, 'No refused request.'),
  );
}

/** An agent's card: its switch, its recent refusals, its budgets, then its policy. */
function agentCard(agent) {
  return h(
    'section',
    { class: 'card', 'data-agent-id': agent.agent_id },
    h('h2', {}, agent.name, ' ', h('code', { class: 'muted' }, agent.agent_id)),
    suspensionControls(agent),
    refusalsTable(agent),
    budgetsTable(agent),
    policyForm(agent),
  );
}

/**
 * Every calendar budget the agent is under in its current period (its own, per target, the
 * installation's), then what else limits it: the allowed targets and the alert percentages.
 */
function budgetsTable(agent) {
  const targets = agent.policy.targets;
  const allowed =
    targets === null
      ? 'any target.'
      : targets.length === 0
        ? 'none (every request is refused).'
        : `${targets.map((target) => (target.month_cap === null ? target.target_id : `${target.target_id} (at most ${target.month_cap.display} a month)`)).join(', ')}.`;
  return h(
    'div',
    { class: 'budgets' },
    h('h3', {}, 'Budgets this period'),
    standingTable(agent.budgets, agent.time_zone ?? 'UTC', 'No calendar budget: the caps below are its only limits.'),
    h('p', { class: 'muted' }, `Periods in ${agent.time_zone ?? 'UTC'} (the installation's time zone), each from its start until the next one's. Spent is settled, held is live holds and claims, of the authorizations created in the period.`),
    h('p', { class: 'allowed-targets' }, 'Targets it may pay for: ', allowed),
    h('p', { class: 'muted' }, 'The alert percentages and the target allow-list are kept when you save below; change them with `lexec ledger policy show --export FILE`, then `lexec ledger policy set --file FILE`.'),
  );
}

const POLICY_FIELDS = [
  ['per_authorization_cap_units', 'Per authorization', (policy) => policy.per_authorization_cap.units],
  ['daily_cap_units', 'Daily cap', (policy) => policy.daily_cap.units],
  ['approval_threshold_units', 'Approval above', (policy) => policy.approval_threshold.units],
];
/** Optional limits, empty for none: the runaway-loop breaker's three, then the calendar budgets. */
const LIMIT_FIELDS = [
  ['max_requests_per_minute', 'Requests per minute', (policy) => policy.velocity.max_requests_per_minute ?? ''],
  ['max_requests_per_hour', 'Requests per hour', (policy) => policy.velocity.max_requests_per_hour ?? ''],
  ['suspend_after_velocity_refusals', 'Suspend after velocity refusals', (policy) => policy.velocity.suspend_after_velocity_refusals ?? ''],
  ['day_budget_units', 'Day budget', (policy) => policy.budgets.day?.units ?? ''],
  ['week_budget_units', 'Week budget', (policy) => policy.budgets.week?.units ?? ''],
  ['month_budget_units', 'Month budget', (policy) => policy.budgets.month?.units ?? ''],
];

/**
 * An agent's policy to edit, in micro-units (exact; the page does no arithmetic on money). The
 * version it was opened at is kept in the form across refreshes, and the change is saved only if
 * the policy is still at it: a change someone made meanwhile is never overwritten unseen.
 */
function policyForm(agent) {
  const id = agent.agent_id;
  return [
    h('h3', {}, 'Policy'),
    h('p', { class: 'muted' }, 'Amounts in micro-units (1 USD = 1000000); an empty limit or budget means none. Saved only if the policy is still at the version it had when you opened this page: a change someone made meanwhile is never overwritten.'),
    versionedForm({
      key: `policy-${id}`,
      nameOf: (name) => `${name}-${id}`,
      versionName: `policy-version-${id}`,
      groups: [POLICY_FIELDS, LIMIT_FIELDS.slice(0, 3), LIMIT_FIELDS.slice(3)],
      current: agent.policy,
      path: `/api/agents/${id}/policy`,
      answerOf: (result) => result.policy,
      saved: (saved) => `Saved: the policy of ${agent.name} is at version ${saved.version}.`,
      stale: (version) => `Nothing was saved: someone changed this policy since you opened it (it is at version ${version} now). Its current values are in the table; press “Load current values”, make your change on top of them, and save again.`,
      saveLabel: 'Save policy',
    }),
  ];
}
