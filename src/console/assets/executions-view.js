// The Executions view and an execution's page (docs/console.md).
import { ConsoleError, agentName, badge, clipped, dash, duration, facts, forgetImages, getJson, h, images, link, send, table, time } from './console-util.js';

const STATES = ['pending', 'scheduled', 'running', 'succeeded', 'failed', 'reconciliation'];

/** The filter the page's address holds (`?state&agent_id&target_id&from_date&until_date&q&before`). */
const FILTERS = ['state', 'agent_id', 'target_id', 'from_date', 'until_date', 'q'];

/** A local calendar day (`2026-11-27` from a date input) as the ISO time its midnight is, `days` later. */
function dayStart(value, days = 0) {
  const [year, month, day] = value.split('-').map((part) => Number.parseInt(part, 10));
  return new Date(year, month - 1, day + days).toISOString();
}

export async function executions() {
  const params = new URLSearchParams(location.search);
  const value = (name) => params.get(name) ?? '';
  const query = new URLSearchParams();
  for (const name of ['state', 'agent_id', 'target_id', 'q', 'before']) if (value(name) !== '') query.set(name, value(name));
  if (/^\d{4}-\d\d-\d\d$/.test(value('from_date'))) query.set('from', dayStart(value('from_date')));
  // Through the end of that day.
  if (/^\d{4}-\d\d-\d\d$/.test(value('until_date'))) query.set('until', dayStart(value('until_date'), 1));
  const data = await getJson(`/api/executions${query.size === 0 ? '' : `?${query}`}`);
  /** Goes to the first page of the filter as the form holds it. */
  const apply = (event) => {
    event.preventDefault();
    const form = new FormData(event.target.closest('form'));
    const next = new URLSearchParams();
    for (const name of FILTERS) {
      const entered = String(form.get(name) ?? '').trim();
      if (entered !== '') next.set(name, entered);
    }
    location.search = next.toString();
  };
  const filters = h(
    'form',
    { class: 'filters', id: 'execution-filters', onsubmit: apply },
    h('label', {}, 'State: ', h('select', { name: 'state', 'aria-label': 'Filter by state' }, h('option', { value: '', selected: value('state') === '' }, 'all states'), STATES.map((name) => h('option', { value: name, selected: value('state') === name }, name)))),
    ' ',
    h('label', {}, 'Agent: ', h('select', { name: 'agent_id' }, h('option', { value: '', selected: value('agent_id') === '' }, 'all agents'), data.agents.map((agent) => h('option', { value: agent.agent_id, selected: value('agent_id') === agent.agent_id }, agent.name)))),
    ' ',
    h('label', {}, 'Target: ', h('input', { type: 'text', name: 'target_id', value: value('target_id'), size: 24, maxlength: 200 })),
    ' ',
    h('label', {}, 'From: ', h('input', { type: 'date', name: 'from_date', value: value('from_date') })),
    ' ',
    h('label', {}, 'Until: ', h('input', { type: 'date', name: 'until_date', value: value('until_date') })),
    ' ',
    h('label', {}, 'Search: ', h('input', { type: 'search', name: 'q', value: value('q'), size: 30, maxlength: 200, placeholder: 'execution id, authorization id or prompt' })),
    ' ',
    h('button', { type: 'submit' }, 'Filter'),
    FILTERS.some((name) => value(name) !== '') ? [' ', link('/executions', 'Clear')] : null,
  );
  const rows = data.executions.map((execution) =>
    h(
      'tr',
      { 'data-execution-id': execution.execution_id },
      h('td', {}, time(execution.created_at)),
      h('td', {}, link(`/executions/${execution.execution_id}`, execution.execution_id)),
      h('td', {}, badge(execution.state), execution.partial ? [' ', h('span', { class: 'badge state-partial' }, 'partial')] : null),
      h('td', {}, dash(execution.phase ?? execution.state_reason)),
      h('td', {}, agentName(execution)),
      h('td', {}, execution.target_id),
      h('td', { class: 'prompt-cell' }, clipped(execution.prompt)),
      h('td', {}, `${execution.artifact_count} / ${dash(execution.image_count)}`),
      h('td', { class: 'amount' }, execution.cost === null ? (execution.held === null ? '—' : `held ${execution.held.display}`) : execution.cost.display),
    ),
  );
  const older = new URLSearchParams(location.search);
  if (data.next_before !== null) older.set('before', data.next_before);
  const newest = new URLSearchParams(location.search);
  newest.delete('before');
  const narrowed = FILTERS.some((name) => name !== 'state' && value(name) !== '');
  return [
    h('h1', {}, 'Executions'),
    filters,
    value('before') === '' ? null : h('p', {}, link(`/executions${newest.size === 0 ? '' : `?${newest}`}`, 'Newest')),
    table(['Admitted', 'Execution', 'State', 'Phase / reason', 'Agent', 'Target', 'Prompt', 'Images', 'Cost'], rows, narrowed ? `No execution matches among the ${data.scanned} read.` : 'No executions yet.'),
    narrowed ? h('p', { class: 'muted', id: 'scanned' }, `Searched the ${data.scanned} newest executions${value('before') === '' ? '' : ' older than the previous page'}; “Older…” searches further.`) : null,
    data.next_before === null ? null : h('p', {}, link(`/executions?${older}`, 'Older…')),
  ];
}

/** An artifact as a thumbnail linking to its full size: fetched once with the session, shown from a blob: URL. */
function thumbnail(artifact) {
  let entry = images.get(artifact.path);
  if (entry === undefined) {
    const image = h('img', { alt: `image ${artifact.ordinal + 1}` });
    entry = { node: h('a', { target: '_blank', class: 'thumb' }, image), url: null };
    images.set(artifact.path, entry);
    const current = entry;
    send('GET', artifact.path)
      .then(async (response) => {
        if (!response.ok) throw new ConsoleError(response.status, null);
        const url = URL.createObjectURL(await response.blob());
        // Forgotten meanwhile (another page of the view): free it at once.
        if (images.get(artifact.path) !== current) return URL.revokeObjectURL(url);
        current.url = url;
        image.src = url;
        current.node.href = url;
        return undefined;
      })
      .catch(() => {
        image.alt = `image ${artifact.ordinal + 1} could not be loaded`;
      });
  }
  return entry.node;
}

/** "1 of 2 images delivered; billed for 1 (0.003000 USD)". */
function deliveredText(delivery, cost) {
  const billed = delivery.billed === null ? `billed ${cost}` : `billed for ${delivery.billed} (${cost})`;
  return `${delivery.delivered} of ${delivery.requested} image${delivery.requested === 1 ? '' : 's'} delivered; ${billed}`;
}

/** An execution's state in the operator's words: what happened, what it cost, what to do. */
function headline(data) {
  const cost = data.receipt?.amount.display ?? '—';
  if (data.state === 'succeeded' && data.delivery?.partial) {
    return h(
      'p',
      { class: 'headline', id: 'headline' },
      badge(data.state),
      ' ',
      h('span', { class: 'badge state-partial' }, 'partial'),
      ` Partial delivery: ${deliveredText(data.delivery, cost)}. The provider returned fewer images than asked; the agent paid only for the images delivered. Nothing to resolve; the agent can ask again for the rest.`,
    );
  }
  if (data.state === 'succeeded') {
    const delivered = data.delivery === null ? `${data.artifacts.length} image${data.artifacts.length === 1 ? '' : 's'} stored` : `${data.delivery.delivered} of ${data.delivery.requested} delivered`;
    return h('p', { class: 'headline', id: 'headline' }, badge(data.state), ` Done: ${delivered}, ${cost} settled. Nothing to do.`);
  }
  if (data.state === 'reconciliation') {
    return h(
      'p',
      { class: 'headline', id: 'headline' },
      badge(data.state),
      ` Billing needs you (${dash(data.state_reason)}): ${data.recommended_action.description} `,
      h('a', { href: `/reconciliation#resolve-${data.execution_id}`, id: 'resolve-link' }, 'Resolve it →'),
    );
  }
  return h('p', { class: 'headline', id: 'headline' }, badge(data.state), ' ', [data.phase ?? data.state_reason, data.recommended_action.description].filter((part) => part !== null).join(' — '));
}

/** Who decided a request, in words: a person by name, an unnamed approver credential, or the policy. */
function decider(by) {
  if (by.kind === 'policy') return 'the policy (at or below its approval threshold: no human needed)';
  return by.kind === 'person' ? by.name : `approver credential ${by.name}`;
}

/** The timeline's first steps, from the authorization at the ledger: requested, the wait for a human, the decision and its reason. */
function authorizationSteps(auth) {
  if (auth === null) return h('li', { class: 'todo' }, h('span', {}, 'Authorization'), ' ', 'the ledger did not answer for it');
  const decided =
    auth.decided_at === null
      ? null
      : h(
          'li',
          { class: 'done', id: 'step-decided' },
          h('span', {}, auth.decision === 'denied' ? 'Denied' : 'Approved'),
          ' ',
          h('time', {}, time(auth.decided_at)),
          ` by ${auth.decided_by === null ? 'an unrecorded approver' : decider(auth.decided_by)}`,
          auth.reason === null ? '' : ` — “${auth.reason}”`,
        );
  return [
    h('li', { class: 'done', id: 'step-requested' }, h('span', {}, 'Requested'), ' ', h('time', {}, time(auth.requested_at)), ` — ${auth.amount.display}${auth.target_id === null ? '' : ` for ${auth.target_id}`}`),
    auth.waited_ms === null ? null : h('li', { class: 'done wait', id: 'step-waited' }, h('span', {}, 'Waited for a human'), ` ${duration(auth.waited_ms)}`),
    decided,
  ];
}

export async function execution() {
  const id = document.body.dataset.executionId;
  const data = await getJson(`/api/executions/${id}`);
  forgetImages(data.artifacts.map((artifact) => artifact.path));
  const t = data.timeline;
  const steps = [
    ['Admitted', t.admitted_at],
    ['Submitted', t.submitted_at],
    ['Checkpointed', t.checkpointed_at],
    ['Stored', t.stored_at],
    t.released_at === null ? ['Settled', t.settled_at] : ['Released', t.released_at],
  ];
  const attempts = data.provider_attempts.map((attempt) =>
    h('tr', {}, h('td', {}, attempt.attempt_number), h('td', {}, attempt.state), h('td', {}, dash(attempt.request_id)), h('td', {}, attempt.checkpointed ? 'yes' : 'no'), h('td', {}, time(attempt.deadline_at)), h('td', { class: 'amount' }, attempt.amount?.display ?? '—')),
  );
  return [
    h('p', {}, link('/executions', '← Executions')),
    h('h1', {}, 'Execution ', h('code', {}, data.execution_id)),
    headline(data),
    facts([
      ['Agent', agentName(data)],
      ['Target', data.target_id],
      ['Prompt', dash(data.prompt)],
      ['Images', `${data.artifacts.length} stored of ${dash(data.image_count)} (${dash(data.image_size)})`],
      ['Authorization', h('code', {}, data.spend_auth_token_id)],
      ['Held', data.held?.display ?? '—'],
      ['Cost', data.receipt === null ? '—' : h('strong', { class: 'amount' }, data.receipt.amount.display)],
    ]),
    h('h2', {}, 'Timeline'),
    h('ol', { class: 'timeline', id: 'timeline' }, authorizationSteps(data.authorization), steps.map(([name, at]) => h('li', { class: at === null ? 'todo' : 'done' }, h('span', {}, name), ' ', h('time', {}, time(at))))),
    h('h2', {}, 'Provider attempts'),
    table(['#', 'State', 'Request id', 'Checkpointed', 'Deadline', 'Amount'], attempts, 'No provider attempt yet.'),
    h('h2', {}, 'Receipt'),
    data.receipt === null
      ? h('p', { class: 'muted' }, 'No receipt yet.')
      : facts([
          ['Receipt', h('code', {}, data.receipt.receipt_id)],
          ['Amount', data.receipt.amount.display],
          ['Provider request', dash(data.receipt.provider_request_id)],
          ['Ledger settlement', dash(data.receipt.ledger_settlement_id)],
        ]),
    h('h2', {}, 'Images'),
    data.artifacts.length === 0 ? h('p', { class: 'muted' }, 'No images stored yet.') : h('div', { class: 'gallery' }, data.artifacts.map(thumbnail)),
  ];
}
