// The Approvals view (docs/console.md): requests awaiting a human, approved or denied as the
// signed-in name — one by one, or all of one agent's at once — and the history of decided ones.
import { ConsoleError, act, agentName, clipped, dash, explain, facts, getJson, h, leftoverOutcomes, main, outcome, postJson, refreshNow, state, table, time } from './console-util.js';

/** "a client is waiting (seen 3 s ago)" or why it may have given up. */
function clientLine(client) {
  if (client.last_seen_at === null) return h('span', { class: 'client-none' }, 'no client has asked after it (a request from another client, or one that never waited)');
  const ago = client.seen_seconds_ago < 120 ? `${client.seen_seconds_ago} s` : `${Math.floor(client.seen_seconds_ago / 60)} min`;
  return client.waiting
    ? h('strong', { class: 'client-waiting' }, `a client is waiting (seen ${ago} ago)`)
    : h('span', { class: 'client-gone' }, `no client has asked for ${ago} — it may have given up`);
}

/** Says how one decision ended, in its card's outcome line. */
const decidedText = (result) => `Authorization ${result.token_id}: ${result.status}${result.decided_by_name ? ` by ${result.decided_by_name}` : ''}.`;

/**
 * Decides every request of one agent the page listed, after the operator confirmed the count and
 * total: each is its own request, its outcome on its own line (a lost race says who decided first).
 */
async function decideAll(group, decision, out) {
  const verb = decision === 'approve' ? 'Approve' : 'Deny';
  const who = group.agent_name ?? group.agent_id;
  if (!window.confirm(`${verb} all ${group.count} pending request${group.count === 1 ? '' : 's'} of ${who}, ${group.total.display} in total?`)) return;
  const reason = main.querySelector(`[name="bulk-reason-${group.agent_id}"]`)?.value ?? '';
  state.busy = true;
  out.textContent = 'Working…';
  out.className = 'outcome';
  let done = 0;
  let refused = 0;
  try {
    for (const tokenId of group.token_ids) {
      const line = outcome(tokenId);
      try {
        line.textContent = decidedText(await postJson(`/api/approvals/${tokenId}/${decision}`, reason === '' ? {} : { reason }));
        line.className = 'outcome ok';
        done += 1;
      } catch (error) {
        line.textContent = `Authorization ${tokenId}: ${explain(error)}`;
        line.className = 'outcome error';
        refused += 1;
        if (error instanceof ConsoleError && error.status === 401) throw error;
      }
    }
    out.textContent = `${verb === 'Approve' ? 'Approved' : 'Denied'} ${done} of ${group.count}${refused === 0 ? '' : `; ${refused} not (each says why below)`}.`;
    out.className = refused === 0 ? 'outcome ok' : 'outcome error';
  } catch (error) {
    out.textContent = explain(error);
    out.className = 'outcome error';
  } finally {
    state.busy = false;
  }
  await refreshNow();
}

function bulkControls(groups) {
  if (groups.length === 0) return null;
  return h(
    'section',
    { class: 'card bulk', id: 'bulk' },
    h('h2', {}, 'All of one agent'),
    groups.map((group) => {
      const out = outcome(`bulk-${group.agent_id}`);
      return h(
        'div',
        { 'data-bulk-agent-id': group.agent_id },
        h(
          'p',
          { class: 'actions' },
          h('strong', {}, group.agent_name ?? group.agent_id),
          `: ${group.count} pending, ${group.total.display} in total. `,
          h('label', {}, 'Reason (optional): ', h('input', { type: 'text', name: `bulk-reason-${group.agent_id}`, maxlength: 500 })),
          ' ',
          h('button', { type: 'button', class: 'approve approve-all', onclick: () => void decideAll(group, 'approve', out) }, `Approve all ${group.count}`),
          ' ',
          h('button', { type: 'button', class: 'deny deny-all', onclick: () => void decideAll(group, 'deny', out) }, `Deny all ${group.count}`),
        ),
        out,
      );
    }),
  );
}

const OUTCOMES = [
  ['', 'all outcomes'],
  ['approved', 'approved'],
  ['denied', 'denied'],
  ['expired', 'expired undecided'],
  ['cancelled', 'cancelled undecided'],
];

/** Requests that waited for a human and no longer do: who decided, when, why. */
async function history() {
  const params = new URLSearchParams(location.search);
  const query = new URLSearchParams();
  if (params.get('outcome')) query.set('outcome', params.get('outcome'));
  if (params.get('agent_id')) query.set('agent_id', params.get('agent_id'));
  const data = await getJson(`/api/approvals/history${query.size === 0 ? '' : `?${query}`}`);
  const filtered = (name) => (event) => {
    const next = new URLSearchParams(location.search);
    if (event.target.value === '') next.delete(name);
    else next.set(name, event.target.value);
    location.search = next.toString();
  };
  const rows = data.decided.map((entry) =>
    h(
      'tr',
      { 'data-token-id': entry.token_id },
      h('td', {}, time(entry.at)),
      h('td', {}, h('span', { class: `badge decision-${entry.outcome}` }, entry.outcome)),
      h('td', {}, entry.decided_by === null ? '—' : entry.decided_by.name),
      h('td', {}, dash(entry.reason)),
      h('td', {}, agentName(entry)),
      h('td', { class: 'amount' }, entry.amount.display),
      h('td', {}, dash(entry.target_id)),
      h('td', { class: 'prompt-cell' }, clipped(entry.prompt)),
      h('td', {}, time(entry.requested_at)),
      h('td', {}, h('code', {}, entry.token_id)),
    ),
  );
  return h(
    'section',
    { id: 'history' },
    h('h2', {}, 'Decided'),
    h(
      'p',
      {},
      h('label', {}, 'Outcome: ', h('select', { name: 'history-outcome', onchange: filtered('outcome') }, OUTCOMES.map(([value, label]) => h('option', { value, selected: (params.get('outcome') ?? '') === value }, label)))),
      ' ',
      h(
        'label',
        {},
        'Agent: ',
        h('select', { name: 'history-agent', onchange: filtered('agent_id') }, h('option', { value: '', selected: !params.get('agent_id') }, 'all agents'), data.agents.map((agent) => h('option', { value: agent.agent_id, selected: params.get('agent_id') === agent.agent_id }, agent.name))),
      ),
    ),
    h('p', { class: 'muted' }, 'Requests that waited for a human, newest first: approved or denied by whom, when and why, or left to expire (or cancelled when their agent was suspended).'),
    table(['When', 'Outcome', 'By', 'Reason', 'Agent', 'Amount', 'Target', 'Prompt', 'Requested', 'Authorization'], rows, 'No decided request yet.'),
  );
}

export async function approvals() {
  const [data, decided] = await Promise.all([getJson('/api/approvals'), history()]);
  const cards = data.approvals.map((approval) => {
    const out = outcome(approval.token_id);
    const reasonName = `reason-${approval.token_id}`;
    const decide = (decision) => () => {
      const reason = main.querySelector(`[name="${reasonName}"]`)?.value ?? '';
      void act(out, () => postJson(`/api/approvals/${approval.token_id}/${decision}`, reason === '' ? {} : { reason }), decidedText);
    };
    return h(
      'section',
      { class: 'card', 'data-token-id': approval.token_id },
      h('h2', {}, h('span', { class: 'amount' }, approval.amount.display), ' for ', approval.agent_name ?? approval.agent_id),
      h('p', { class: 'client' }, clientLine(approval.client)),
      facts([
        ['Prompt', approval.prompt === null ? '—' : h('span', { class: 'prompt full' }, approval.prompt)],
        ['Target', dash(approval.target_id)],
        ['Purpose', dash(approval.purpose)],
        ['Authorization', h('code', {}, approval.token_id)],
        ['Requested', time(approval.created_at)],
        ['Expires', time(approval.expires_at)],
        [
          // The policy the ledger decided this request under (kept with the authorization).
          'Required by',
          approval.required_by === null
            ? 'not recorded (requested before the ledger kept it)'
            : `approval above ${approval.required_by.approval_threshold.display}; at most ${approval.required_by.per_authorization_cap.display} each, ${approval.required_by.daily_cap.display} a day${approval.required_by.version === null ? '' : ` (policy version ${approval.required_by.version})`}`,
        ],
        [
          'Current policy',
          approval.policy === null
            ? '—'
            : `approval above ${approval.policy.approval_threshold.display}; at most ${approval.policy.per_authorization_cap.display} each, ${approval.policy.daily_cap.display} a day (${approval.policy.source}, version ${approval.policy.version})`,
        ],
      ]),
      h('p', {}, h('label', {}, 'Reason (optional): ', h('input', { type: 'text', name: reasonName, maxlength: 500 }))),
      h('p', { class: 'actions' }, h('button', { type: 'button', class: 'approve', onclick: decide('approve') }, 'Approve'), ' ', h('button', { type: 'button', class: 'deny', onclick: decide('deny') }, 'Deny')),
      out,
    );
  });
  const listed = [...data.approvals.map((approval) => approval.token_id), ...data.agents.map((group) => `bulk-${group.agent_id}`)];
  return [
    h('h1', {}, 'Approvals'),
    leftoverOutcomes(listed),
    ...(cards.length === 0 ? [h('p', { class: 'muted' }, 'Nothing awaits a decision.')] : [bulkControls(data.agents), ...cards]),
    decided,
  ];
}
