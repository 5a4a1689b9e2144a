// The Executions view and an execution's page (docs/console.md).
import { ConsoleError, agentName, badge, dash, facts, forgetImages, getJson, h, images, link, send, table, time } from './console-util.js';

const STATES = ['pending', 'scheduled', 'running', 'succeeded', 'failed', 'reconciliation'];

export async function executions() {
  const params = new URLSearchParams(location.search);
  const state = params.get('state') ?? '';
  const query = new URLSearchParams();
  if (state !== '') query.set('state', state);
  if (params.get('before')) query.set('before', params.get('before'));
  const data = await getJson(`/api/executions${query.size === 0 ? '' : `?${query}`}`);
  const filter = h(
    'select',
    {
      name: 'state-filter',
      'aria-label': 'Filter by state',
      onchange: (event) => {
        const next = new URLSearchParams();
        if (event.target.value !== '') next.set('state', event.target.value);
        location.search = next.toString();
      },
    },
    h('option', { value: '', selected: state === '' }, 'all states'),
    STATES.map((name) => h('option', { value: name, selected: state === name }, name)),
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
      h('td', {}, `${execution.artifact_count} / ${dash(execution.image_count)}`),
      h('td', { class: 'amount' }, execution.cost === null ? (execution.held === null ? '—' : `held ${execution.held.display}`) : execution.cost.display),
    ),
  );
  const older = new URLSearchParams();
  if (state !== '') older.set('state', state);
  if (data.next_before !== null) older.set('before', data.next_before);
  return [
    h('h1', {}, 'Executions'),
    h('p', {}, h('label', {}, 'State: ', filter), params.get('before') ? [' ', link(`/executions${state === '' ? '' : `?state=${state}`}`, 'Newest')] : null),
    table(['Admitted', 'Execution', 'State', 'Phase / reason', 'Agent', 'Target', 'Images', 'Cost'], rows, 'No executions yet.'),
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
    h('ol', { class: 'timeline' }, steps.map(([name, at]) => h('li', { class: at === null ? 'todo' : 'done' }, h('span', {}, name), ' ', h('time', {}, time(at))))),
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
