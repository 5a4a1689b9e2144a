// The Overview view (docs/console.md): the stack's components, engine, spend per agent and the installation budget.
import { HELD_NOW_MEANS, badge, dash, engineFact, facts, getJson, h, heldNowHeader, link, standingTable, table } from './console-util.js';


export async function overview() {
  const data = await getJson('/api/overview');
  const components = data.components.map((component) =>
    h('tr', {}, h('td', {}, component.name), h('td', {}, badge(component.state)), h('td', {}, component.ready === null ? '—' : component.ready ? 'ready' : `not ready${component.probe_error ? `: ${component.probe_error}` : ''}`), h('td', {}, dash(component.pid)), h('td', {}, component.port), h('td', {}, component.restarts)),
  );
  const spend = data.spend.map((agent) =>
    h('tr', {}, h('td', {}, agent.name), h('td', { class: 'amount' }, agent.spent.display), h('td', { class: 'amount' }, agent.held.display), h('td', { class: 'amount' }, agent.policy.daily_cap.display), h('td', { class: 'amount' }, agent.remaining.display)),
  );
  return [
    h('h1', {}, `Stack of profile “${data.profile}”`),
    h('p', {}, badge(data.state), ' ', data.usable ? 'usable' : 'not usable', data.next_step === null ? '' : ` — ${data.next_step}`),
    facts([
      ['Generation', dash(data.generation_id)],
      ['Engine', engineFact(data.engine)],
      ['Executions in flight', data.executions_in_flight === null ? '—' : link('/executions', String(data.executions_in_flight))],
      ['Awaiting approval', data.pending_approvals === null ? '—' : link('/approvals', String(data.pending_approvals))],
      ['Awaiting reconciliation', data.awaiting_human === null ? '—' : link('/reconciliation', String(data.awaiting_human))],
    ]),
    h('h2', {}, 'Components'),
    table(['Component', 'State', 'Readiness', 'Pid', 'Port', 'Restarts'], components, 'No components.'),
    h('h2', {}, 'Spend in the last 24 h against the daily caps'),
    table(['Agent', 'Spent', heldNowHeader(), 'Daily cap', 'Remaining'], spend, 'No agents (or the stack is not usable).'),
    h('p', { class: 'muted' }, HELD_NOW_MEANS),
    installationBudget(data.installation_budget),
  ];
}

/** The installation budget across all agents this period, when one is set (edited on the Agents view). */
function installationBudget(budget) {
  if (budget === null || budget.standing.length === 0) return null;
  return [
    h('h2', { id: 'installation-budget-standing' }, 'Installation budget (all agents)'),
    standingTable(budget.standing, budget.time_zone, ''),
    h('p', { class: 'muted' }, `Periods in ${budget.time_zone}. `, link('/agents', 'Change it on Agents and policies'), '.'),
  ];
}
