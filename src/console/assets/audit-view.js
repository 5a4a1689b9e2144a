// The Audit view (docs/console.md): the ledger's audit trail, read-only.
import { agentName, dash, getJson, h, link, table, time } from './console-util.js';

const AUDIT_PERIODS = [
  ['24h', 'the last 24 hours'],
  ['7d', 'the last 7 days'],
  ['30d', 'the last 30 days'],
  ['all', 'all time'],
];

/** Each audit action in words (the ledger's action code is shown under it, as `lexec ledger audit` prints it). */
const ACTION_LABELS = {
  agent_added: 'Agent added',
  agent_suspended: 'Agent suspended',
  agent_resumed: 'Agent resumed',
  policy_changed: 'Policy changed',
  authorization_approved: 'Request approved',
  authorization_denied: 'Request denied',
  reconciliation_resolved: 'Reconciliation resolved',
  credential_registered: 'Credential registered',
  credential_revoked: 'Credential revoked',
  credential_rotated: 'Credential rotated',
  webhook_added: 'Webhook sink added',
  webhook_removed: 'Webhook sink removed',
  budget_changed: 'Installation budget changed',
  enrolment_issued: 'Enrolment token issued',
  enrolment_revoked: 'Enrolment token revoked',
  enrolment_redeemed: 'Executor host enrolled',
};

/** Who acted: a person's name once credentials carry one, the credential's kind and id, or the ledger itself. */
function actor(event) {
  const who = event.actor_credential_id === null ? h('span', {}, event.actor_kind) : h('span', {}, `${event.actor_kind} `, h('code', {}, event.actor_credential_id));
  return event.actor_name === null ? who : h('span', {}, event.actor_name, ' (', who, ')');
}

/** The audit trail, read-only: oldest first within the period, one page at a time (`Later…`). */
export async function audit() {
  const params = new URLSearchParams(location.search);
  const query = new URLSearchParams();
  for (const name of ['period', 'agent_id', 'after']) if (params.get(name)) query.set(name, params.get(name));
  const data = await getJson(`/api/audit${query.size === 0 ? '' : `?${query}`}`);
  const period = params.get('period') ?? '24h';
  const agent = params.get('agent_id') ?? '';
  /** Goes to the first page of another filter. */
  const filtered = (name) => (event) => {
    const next = new URLSearchParams(location.search);
    next.delete('after');
    if (event.target.value === '') next.delete(name);
    else next.set(name, event.target.value);
    location.search = next.toString();
  };
  const rows = data.events.map((event) =>
    h(
      'tr',
      { 'data-audit-id': event.audit_id },
      h('td', {}, time(event.at)),
      h('td', {}, actor(event)),
      h('td', {}, ACTION_LABELS[event.action] ?? event.action, h('br'), h('code', { class: 'muted' }, event.action)),
      h('td', {}, event.agent_id === null ? '—' : agentName(event)),
      h('td', {}, h('code', {}, event.subject_id)),
      h('td', {}, dash(event.change)),
      h('td', {}, dash(event.reason)),
    ),
  );
  const later = new URLSearchParams(location.search);
  if (data.next_after !== null) later.set('after', data.next_after);
  const first = new URLSearchParams(location.search);
  first.delete('after');
  return [
    h('h1', {}, 'Audit'),
    h(
      'p',
      {},
      h('label', {}, 'Period: ', h('select', { name: 'audit-period', onchange: filtered('period') }, AUDIT_PERIODS.map(([value, label]) => h('option', { value, selected: period === value }, label)))),
      ' ',
      h(
        'label',
        {},
        'Agent: ',
        h('select', { name: 'audit-agent', onchange: filtered('agent_id') }, h('option', { value: '', selected: agent === '' }, 'all agents'), data.agents.map((entry) => h('option', { value: entry.agent_id, selected: agent === entry.agent_id }, entry.name))),
      ),
      params.get('after') ? [' ', link(`/audit?${first}`, 'First page')] : null,
    ),
    h('p', { class: 'muted' }, 'Every operator action, oldest first: who did it (the credential, or the ledger itself), what it changed, and why.'),
    table(['When', 'Who', 'Action', 'Agent', 'Subject', 'Change', 'Reason'], rows, 'No operator action in this period.'),
    data.next_after === null ? null : h('p', {}, link(`/audit?${later}`, 'Later…')),
  ];
}

