// The operator console's one script (docs/console.md). It polls the console server's JSON
// endpoints every 2 s and renders with DOM APIs only: every string from the stack — prompts,
// purposes, notes, ids — becomes a text node, never markup. Amounts arrive formatted by the
// server (exact micro-units); this script does no arithmetic on money.
//
// The session secret login.js received is kept in this tab's sessionStorage (scoped to the exact
// origin, port included, and to this tab) and sent in `x-lexec-session` on every API request;
// images are fetched the same way and shown through blob: URLs. There is no cookie.

const POLL_MS = 2000;
const SESSION_KEY = 'lexec-console-session';
const STATES = ['pending', 'scheduled', 'running', 'succeeded', 'failed', 'reconciliation'];
const main = document.getElementById('main');
const updated = document.getElementById('updated');
const view = document.body.dataset.view;
/** Image nodes and their blob: URLs kept across renders, so a poll never fetches a thumbnail again. */
const images = new Map();
let busy = false;
let poller = null;
let scrolled = false;

class ConsoleError extends Error {
  constructor(status, body) {
    super(body?.error?.code ?? `status ${status}`);
    this.status = status;
    this.code = body?.error?.code ?? 'error';
    this.reason = body?.error?.reason_code ?? null;
    this.fields = body?.error?.fields ?? [];
    /** The policy's version now, when a change was refused for being made from an older one. */
    this.currentVersion = typeof body?.error?.current_version === 'string' ? body.error.current_version : null;
    /** Who decided a request first (a lost race): the decision, the approver's name (or null) and when. */
    this.decided =
      body?.error?.code === 'already_decided' && typeof body.error.decided_at === 'string'
        ? { decision: String(body.error.decision ?? 'decided'), by: typeof body.error.decided_by_name === 'string' ? body.error.decided_by_name : null, at: body.error.decided_at }
        : null;
  }
}

const EXPLAINED = {
  stack_unavailable: "The profile's stack is not reachable (stopped, restarting or still starting). `lexec stack status` shows it.",
  not_found: 'Not found.',
  conflict: 'Refused: it was already decided or resolved differently.',
  invalid_request: 'Refused as invalid.',
  unauthorized: 'Not signed in.',
  forbidden: 'Refused by the console (cross-site request).',
  stack_refused: 'The stack refused the request.',
  policy_version_mismatch: 'Nothing was saved: someone changed this policy since you opened it.',
};

/** What to enter in a field a refusal names (the form's own words). */
const FIELD_HINTS = {
  images_billed:
    '“Images billed”: with no receipt kept, enter how many images the provider billed for this request (1 to the number asked; its dashboard shows it); with a receipt kept, leave it empty. If the provider charged nothing, resolve as release.',
  note: '“Note”: say in 1-500 characters why you resolve it this way (e.g. what the provider’s dashboard shows).',
  reason: '“Reason”: at most 500 characters.',
  per_authorization_cap_units: '“Per authorization”: whole micro-units (1 USD = 1000000), from 1 up to the daily cap.',
  daily_cap_units: '“Daily cap”: whole micro-units, at least the per-authorization cap.',
  approval_threshold_units: '“Approval above”: whole micro-units, 0 or more (a request above it waits for an approver).',
  expect_version: 'Reload the page: the version it opened the policy at is missing.',
};

function explain(error) {
  if (!(error instanceof ConsoleError)) return 'The console did not answer; is `lexec stack console` still running?';
  if (error.currentVersion !== null) return error.message;
  if (error.decided !== null) return `Already ${error.decided.decision} by ${error.decided.by ?? 'another approver'} at ${new Date(error.decided.at).toLocaleString()}; nothing changed.`;
  const fields = error.fields.length > 0 ? ` Fields: ${error.fields.join(', ')}.` : '';
  const hints = error.fields.map((field) => FIELD_HINTS[field]).filter((hint) => hint !== undefined);
  return `${EXPLAINED[error.code] ?? 'Refused.'}${error.reason === null ? '' : ` (${error.reason})`}${fields}${hints.map((hint) => ` ${hint}`).join('')}`;
}

/** An element with attributes and children; strings become text nodes. */
function h(tag, attributes = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attributes)) {
    if (value === null || value === undefined || value === false) continue;
    if (key.startsWith('on')) node.addEventListener(key.slice(2), value);
    else if (key === 'class') node.className = value;
    else node.setAttribute(key, value === true ? '' : String(value));
  }
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

const NEW_LINK =
  'Open a login link `lexec stack console` printed: each works once, within 10 minutes, and `kill -USR1 <pid of lexec stack console>` prints a new one.';
const SIGNED_OUT = {
  session_missing: `This tab is not signed in: a session belongs to the browser tab that opened its login link. ${NEW_LINK}`,
  session_invalid: `The session ended (signed out, 30 minutes without use, 12 hours after its login, or the console restarted). ${NEW_LINK}`,
  signed_out: `Signed out. ${NEW_LINK}`,
};

/** Leaves the console: forgets the secret, stops polling, frees the images, says why. */
function signedOut(reason) {
  sessionStorage.removeItem(SESSION_KEY);
  if (poller !== null) clearInterval(poller);
  poller = null;
  forgetImages([]);
  updated.textContent = '';
  document.getElementById('logout')?.setAttribute('hidden', '');
  main.replaceChildren(h('h1', {}, 'Not signed in'), h('p', { class: 'error', id: 'signed-out' }, SIGNED_OUT[reason] ?? SIGNED_OUT.session_invalid));
}

/** An API request with this tab's session secret; a refused session signs the tab out. */
async function send(method, path, body) {
  const secret = sessionStorage.getItem(SESSION_KEY);
  if (secret === null) {
    signedOut('session_missing');
    throw new ConsoleError(401, { error: { code: 'unauthorized', reason_code: 'session_missing' } });
  }
  const headers = { 'x-lexec-session': secret };
  if (body !== undefined) headers['content-type'] = 'application/json';
  const response = await fetch(path, { method, headers, credentials: 'omit', body: body === undefined ? undefined : JSON.stringify(body) });
  if (response.status === 401) {
    const data = await response.json().catch(() => null);
    signedOut(data?.error?.reason_code);
    throw new ConsoleError(401, data);
  }
  return response;
}

async function request(method, path, body) {
  const response = await send(method, path, body);
  const data = await response.json().catch(() => null);
  if (!response.ok) throw new ConsoleError(response.status, data);
  return data;
}

const getJson = (path) => request('GET', path);
const postJson = (path, body) => request('POST', path, body);

const time = (iso) => (iso === null || iso === undefined ? '—' : new Date(iso).toLocaleString());
const dash = (value) => (value === null || value === undefined || value === '' ? '—' : value);
const badge = (state) => h('span', { class: `badge state-${state}` }, state);

function table(headers, rows, empty) {
  if (rows.length === 0) return h('p', { class: 'muted' }, empty);
  return h('table', {}, h('thead', {}, h('tr', {}, headers.map((title) => h('th', {}, title)))), h('tbody', {}, rows));
}

function facts(pairs) {
  return h(
    'dl',
    { class: 'facts' },
    pairs.map(([term, value]) => [h('dt', {}, term), h('dd', {}, value)]),
  );
}

function link(href, text) {
  return h('a', { href }, text);
}

/** A link to an outside page only if it is plain http(s) (the Temporal UI). */
function externalLink(url, text) {
  return /^https?:\/\//.test(url) ? h('a', { href: url, target: '_blank', rel: 'noopener noreferrer' }, text) : text;
}

/** An agent by its name, its id beside it in grey (an agent the ledger no longer lists: its id alone). */
function agentName(view) {
  return view.agent_name === null ? h('code', {}, view.agent_id) : h('span', {}, view.agent_name, ' ', h('code', { class: 'muted' }, view.agent_id));
}

/** The workflow engine: its mode, where it answers, and a link to its web UI when there is one. */
function engineFact(engine) {
  const where = engine.address === null ? engine.mode : `${engine.mode} at ${engine.address}`;
  return engine.ui_url === null ? where : h('span', {}, `${where} — `, externalLink(engine.ui_url, 'Temporal UI'));
}

/* ---------- views ---------- */

async function overview() {
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
    table(['Agent', 'Spent', 'Held now', 'Daily cap', 'Remaining'], spend, 'No agents (or the stack is not usable).'),
  ];
}

async function executions() {
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

/** Drops the images whose paths are not in `keep`, revoking their blob: URLs. */
function forgetImages(keep) {
  for (const [path, entry] of images) {
    if (keep.includes(path)) continue;
    if (entry.url !== null) URL.revokeObjectURL(entry.url);
    images.delete(path);
  }
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

async function execution() {
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

/** Runs an action, shows its outcome in `out`, then renders again. */
async function act(out, action, done) {
  busy = true;
  out.textContent = 'Working…';
  try {
    const result = await action();
    out.textContent = done(result);
    out.className = 'outcome ok';
  } catch (error) {
    out.textContent = explain(error);
    out.className = 'outcome error';
  } finally {
    busy = false;
  }
  await refresh();
}

const outcomes = new Map();
/** The outcome line of an item: kept across renders so a result stays visible. */
function outcome(key) {
  if (!outcomes.has(key)) outcomes.set(key, h('p', { class: 'outcome', role: 'status' }));
  return outcomes.get(key);
}

/** Outcomes of items no longer listed (an approved request, a resolved execution), still shown. */
function leftoverOutcomes(listed) {
  return [...outcomes.entries()].filter(([key, node]) => !listed.includes(key) && node.textContent !== '').map(([, node]) => node);
}

async function approvals() {
  const data = await getJson('/api/approvals');
  const cards = data.approvals.map((approval) => {
    const out = outcome(approval.token_id);
    const reasonName = `reason-${approval.token_id}`;
    const decide = (decision) => () => {
      const reason = main.querySelector(`[name="${reasonName}"]`)?.value ?? '';
      void act(out, () => postJson(`/api/approvals/${approval.token_id}/${decision}`, reason === '' ? {} : { reason }), (result) => `Authorization ${result.token_id}: ${result.status}${result.decided_by_name ? ` by ${result.decided_by_name}` : ''}.`);
    };
    return h(
      'section',
      { class: 'card', 'data-token-id': approval.token_id },
      h('h2', {}, h('span', { class: 'amount' }, approval.amount.display), ' for ', approval.agent_name ?? approval.agent_id),
      facts([
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
  const listed = data.approvals.map((approval) => approval.token_id);
  return [h('h1', {}, 'Approvals'), leftoverOutcomes(listed), cards.length === 0 ? h('p', { class: 'muted' }, 'Nothing awaits a decision.') : cards];
}

async function reconciliation() {
  const data = await getJson('/api/reconciliations');
  const cards = data.executions.map((entry) => {
    const id = entry.execution_id;
    const out = outcome(id);
    const field = (name) => main.querySelector(`[name="${name}-${id}"]`);
    const asked = entry.image_count === null ? 'the number asked' : String(entry.image_count);
    const resolve = () => {
      // No default: settling charges the agent, so the operator chooses, and the page says what is missing before anything is sent.
      const resolution = field('resolution')?.value ?? '';
      const note = field('note')?.value ?? '';
      const billed = field('images-billed')?.value ?? '';
      const missing =
        resolution === ''
          ? 'Choose how to resolve it: settle if the provider billed images for this request (the agent is charged), release if it charged nothing (the hold is returned).'
          : resolution === 'settle' && billed === '' && !entry.receipt_kept
            ? `Enter in “Images billed” how many images the provider billed for this request (1 to ${asked}; its dashboard shows it), or choose release if it charged nothing.`
            : note.trim() === ''
              ? 'Write a note (required, 1-500 characters): why you resolve it this way, e.g. what the provider’s dashboard shows.'
              : null;
      if (missing !== null) {
        out.textContent = missing;
        out.className = 'outcome error';
        return;
      }
      const body = resolution === 'settle' ? { resolution: 'settle', note, ...(billed === '' ? {} : { images_billed: Number.parseInt(billed, 10) }) } : { resolution: 'release', note };
      void act(out, () => postJson(`/api/reconciliations/${id}/resolve`, body), (result) => `Execution ${result.execution.execution_id}: ${result.resolution} (${result.execution.state}). Note: ${result.note}`);
    };
    const delivered = entry.evidence.reduce((sum, attempt) => sum + Number(attempt.delivered_images ?? 0), 0);
    const evidence = entry.evidence.map((attempt) =>
      h(
        'tr',
        {},
        h('td', {}, dash(attempt.provider_request_id)),
        h('td', {}, attempt.state),
        h('td', {}, dash(attempt.outcome_code)),
        h('td', {}, dash(attempt.delivered_images)),
        h('td', {}, attempt.submit_window === null ? '—' : `${time(attempt.submit_window.from)} – ${time(attempt.submit_window.until)}`),
        h('td', {}, attempt.correlation === null ? '—' : attempt.correlation.sent === false ? `no ${attempt.correlation.field} sent` : `${attempt.correlation.field} ${attempt.correlation.value}`),
      ),
    );
    return h(
      'section',
      { class: 'card', 'data-execution-id': id, id: `resolve-${id}` },
      h('h2', {}, link(`/executions/${id}`, id)),
      facts([
        ['Reason', dash(entry.state_reason)],
        ['Recommended', entry.recommended_action.description],
        [
          'Evidence',
          delivered === 0
            ? 'No image reached lexec. Settle only if the provider’s dashboard shows this request billed; otherwise release.'
            : `${delivered} image${delivered === 1 ? '' : 's'} reached lexec${entry.receipt_kept ? '; a receipt is kept (settling bills it)' : ''}.`,
        ],
        ['Agent', entry.agent_id === null ? '—' : agentName(entry)],
        ['Target', entry.target_id],
        ['Held', entry.held.display],
        ['Authorization', h('code', {}, entry.spend_auth_token_id)],
      ]),
      table(['Provider request', 'Attempt state', 'Outcome', 'Delivered images', 'Submitted between', 'Correlation'], evidence, 'No provider attempt.'),
      h(
        'p',
        { class: 'actions' },
        h(
          'label',
          {},
          'Resolve as ',
          h(
            'select',
            { name: `resolution-${id}`, required: true },
            h('option', { value: '', selected: true }, 'choose…'),
            h('option', { value: 'settle' }, 'settle: the provider billed images (charges the agent)'),
            h('option', { value: 'release' }, 'release: the provider charged nothing (returns the hold)'),
          ),
        ),
        ' ',
        h(
          'label',
          {},
          entry.receipt_kept ? 'Images billed (a receipt is kept: leave empty): ' : `Images billed (settle: 1 to ${asked}): `,
          h('input', { type: 'number', min: 1, max: entry.image_count ?? 16, name: `images-billed-${id}` }),
        ),
      ),
      h('p', { class: 'actions' }, h('label', {}, 'Note (required): ', h('input', { type: 'text', name: `note-${id}`, maxlength: 500, size: 50 })), ' ', h('button', { type: 'button', class: 'resolve', onclick: resolve }, 'Resolve')),
      out,
    );
  });
  const listed = data.executions.map((entry) => entry.execution_id);
  return [h('h1', {}, 'Reconciliation'), leftoverOutcomes(listed), cards.length === 0 ? h('p', { class: 'muted' }, 'No execution awaits a human.') : cards];
}

async function agents() {
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
    table(['Agent', 'Status', 'Per authorization', 'Daily cap', 'Approval above', 'Spent (24 h)', 'Held now', 'Remaining', 'Policy'], rows, 'No agents.'),
    data.agents.map(agentCard),
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

/** An agent's card: its switch, then its policy. */
function agentCard(agent) {
  return h('section', { class: 'card', 'data-agent-id': agent.agent_id }, h('h2', {}, agent.name, ' ', h('code', { class: 'muted' }, agent.agent_id)), suspensionControls(agent), policyForm(agent));
}

const POLICY_FIELDS = [
  ['per_authorization_cap_units', 'Per authorization', 'per_authorization_cap'],
  ['daily_cap_units', 'Daily cap', 'daily_cap'],
  ['approval_threshold_units', 'Approval above', 'approval_threshold'],
];

/**
 * An agent's policy to edit, in micro-units (exact; the page does no arithmetic on money). The
 * version it was opened at is kept in the form across refreshes, and the change is saved only if
 * the policy is still at it: a change someone made meanwhile is never overwritten unseen.
 */
function policyForm(agent) {
  const id = agent.agent_id;
  const out = outcome(`policy-${id}`);
  const field = (name) => main.querySelector(`[name="${name}-${id}"]`);
  /** Puts the agent's values as this render has them into the form, with their version. */
  const load = (policy) => {
    for (const [name, , view] of POLICY_FIELDS) field(name).value = policy[view].units;
    field('policy-version').value = policy.version;
  };
  const save = () => {
    const body = Object.fromEntries(POLICY_FIELDS.map(([name]) => [name, field(name)?.value.trim() ?? '']));
    body.expect_version = field('policy-version')?.value ?? agent.policy.version;
    void act(
      out,
      () =>
        postJson(`/api/agents/${id}/policy`, body).catch((error) => {
          if (error instanceof ConsoleError && error.currentVersion !== null) {
            error.message = `Nothing was saved: someone changed this policy since you opened it (it is at version ${error.currentVersion} now). Its current values are in the table; press “Load current values”, make your change on top of them, and save again.`;
          }
          throw error;
        }),
      (result) => {
        load(result.policy);
        return `Saved: the policy of ${agent.name} is at version ${result.policy.version}.`;
      },
    );
  };
  return [
    h('h3', {}, 'Policy'),
    h('p', { class: 'muted' }, 'Amounts in micro-units (1 USD = 1000000). Saved only if the policy is still at the version it had when you opened this page: a change someone made meanwhile is never overwritten.'),
    h(
      'p',
      {},
      POLICY_FIELDS.map(([name, label, view]) => [h('label', {}, `${label}: `, h('input', { type: 'text', inputmode: 'numeric', name: `${name}-${id}`, value: agent.policy[view].units, size: 12 })), ' ']),
      h('input', { type: 'hidden', name: `policy-version-${id}`, value: agent.policy.version }),
    ),
    h('p', { class: 'actions' }, h('button', { type: 'button', onclick: save }, 'Save policy'), ' ', h('button', { type: 'button', onclick: () => { load(agent.policy); out.textContent = ''; } }, 'Load current values')),
    out,
  ];
}

const AUDIT_PERIODS = [
  ['24h', 'the last 24 hours'],
  ['7d', 'the last 7 days'],
  ['30d', 'the last 30 days'],
  ['all', 'all time'],
];

/** Who acted: a person's name once credentials carry one, the credential's kind and id, or the ledger itself. */
function actor(event) {
  const who = event.actor_credential_id === null ? h('span', {}, event.actor_kind) : h('span', {}, `${event.actor_kind} `, h('code', {}, event.actor_credential_id));
  return event.actor_name === null ? who : h('span', {}, event.actor_name, ' (', who, ')');
}

/** The audit trail, read-only: oldest first within the period, one page at a time (`Later…`). */
async function audit() {
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
      h('td', {}, event.action),
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

const VIEWS = { overview, executions, execution, approvals, reconciliation, agents, audit };

/** Replaces the view's content, keeping what the operator typed and where the focus was. */
function render(nodes) {
  const typed = new Map([...main.querySelectorAll('input[name], select[name]')].map((input) => [input.name, input.value]));
  const focused = document.activeElement instanceof HTMLInputElement ? document.activeElement.name : null;
  main.replaceChildren(...[nodes].flat(2).filter((node) => node !== null && node !== undefined));
  for (const input of main.querySelectorAll('input[name], select[name]')) {
    if (typed.has(input.name)) input.value = typed.get(input.name);
  }
  if (focused !== null) main.querySelector(`[name="${focused}"]`)?.focus();
}

async function refresh() {
  const load = VIEWS[view];
  if (load === undefined || busy) return;
  try {
    render(await load());
    // A link to one item (`/reconciliation#resolve-<id>`): its card exists only once the view has loaded.
    if (!scrolled && location.hash.length > 1) document.getElementById(location.hash.slice(1))?.scrollIntoView();
    scrolled = true;
    updated.textContent = `Updated ${new Date().toLocaleTimeString()}`;
    updated.className = 'muted';
  } catch (error) {
    updated.textContent = explain(error);
    updated.className = 'error';
    if (main.querySelector('p.muted')?.textContent === 'Loading…') render([h('p', { class: 'error' }, explain(error))]);
  }
}

document.getElementById('logout')?.addEventListener('click', () => {
  postJson('/api/logout', {})
    .catch(() => null)
    .finally(() => {
      signedOut('signed_out');
    });
});

if (sessionStorage.getItem(SESSION_KEY) === null) signedOut('session_missing');
else {
  poller = setInterval(() => {
    void refresh();
  }, POLL_MS);
  await refresh();
}
