// Shared by the console's views (docs/console.md): the session, the API calls, DOM helpers, and
// the outcome lines of actions. Every string from the stack becomes a text node (`h`), never
// markup. Amounts arrive formatted by the server (exact micro-units); no arithmetic on money here.

export const SESSION_KEY = 'lexec-console-session';
export const main = document.getElementById('main');
export const updated = document.getElementById('updated');
/** Image nodes and their blob: URLs kept across renders, so a poll never fetches a thumbnail again. */
export const images = new Map();
/** `busy` while an action runs (no refresh meanwhile); `poller` the interval of the refresh. */
export const state = { busy: false, poller: null };
/** Renders the current view again (set by console.js). */
let refreshView = async () => {};
export function setRefresh(refresh) {
  refreshView = refresh;
}
/** Renders the current view again now (after an action, or when the live feed says something changed). */
export const refreshNow = () => refreshView();

export class ConsoleError extends Error {
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

/** What a host of one role does not hold (`not_on_this_host`), by the reason the console gives. */
const NOT_ON_THIS_HOST = {
  no_executor_on_host:
    'This profile is a ledger host: it runs no executor, so its executions and reconciliations are on the executor hosts (their consoles show them). Approvals, agents and policies, spend and the audit trail are here.',
  role_not_on_host:
    "This profile is an executor host: approvals, agents and policies, spend and the audit trail are kept by the ledger host (its console shows them). This host's executions and reconciliations are here.",
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

export function explain(error) {
  if (!(error instanceof ConsoleError)) return 'The console did not answer; is `lexec stack console` still running?';
  if (error.currentVersion !== null) return error.message;
  if (error.decided !== null) return `Already ${error.decided.decision} by ${error.decided.by ?? 'another approver'} at ${new Date(error.decided.at).toLocaleString()}; nothing changed.`;
  if (error.code === 'not_on_this_host' && NOT_ON_THIS_HOST[error.reason] !== undefined) return NOT_ON_THIS_HOST[error.reason];
  const fields = error.fields.length > 0 ? ` Fields: ${error.fields.join(', ')}.` : '';
  const hints = error.fields.map((field) => FIELD_HINTS[field]).filter((hint) => hint !== undefined);
  return `${EXPLAINED[error.code] ?? 'Refused.'}${error.reason === null ? '' : ` (${error.reason})`}${fields}${hints.map((hint) => ` ${hint}`).join('')}`;
}

/** An element with attributes and children; strings become text nodes. */
export function h(tag, attributes = {}, ...children) {
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
export function signedOut(reason) {
  sessionStorage.removeItem(SESSION_KEY);
  if (state.poller !== null) clearInterval(state.poller);
  state.poller = null;
  forgetImages([]);
  updated.textContent = '';
  document.getElementById('logout')?.setAttribute('hidden', '');
  main.replaceChildren(h('h1', {}, 'Not signed in'), h('p', { class: 'error', id: 'signed-out' }, SIGNED_OUT[reason] ?? SIGNED_OUT.session_invalid));
}

/** An API request with this tab's session secret; a refused session signs the tab out. */
export async function send(method, path, body) {
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

export async function request(method, path, body) {
  const response = await send(method, path, body);
  const data = await response.json().catch(() => null);
  if (!response.ok) throw new ConsoleError(response.status, data);
  return data;
}

export const getJson = (path) => request('GET', path);
export const postJson = (path, body) => request('POST', path, body);

export const time = (iso) => (iso === null || iso === undefined ? '—' : new Date(iso).toLocaleString());
export const dash = (value) => (value === null || value === undefined || value === '' ? '—' : value);
export const badge = (state) => h('span', { class: `badge state-${state}` }, state);

/** A table; a header is its text, or a node (a term with its explanation). */
export function table(headers, rows, empty) {
  if (rows.length === 0) return h('p', { class: 'muted' }, empty);
  return h('table', {}, h('thead', {}, h('tr', {}, headers.map((title) => h('th', {}, title)))), h('tbody', {}, rows));
}

/** What "Held now" counts, wherever it is shown (docs/console.md). */
export const HELD_NOW_MEANS =
  'Held now: amounts reserved and not yet settled or released — requests waiting for approval (pending), approved requests not yet claimed, and executions under way.';
export const heldNowHeader = () => h('span', { class: 'term', title: HELD_NOW_MEANS }, 'Held now', h('sup', { 'aria-hidden': 'true' }, '?'));

/** Text cut to `max` characters with an ellipsis; the full text in the tooltip and, on click, in place. */
export function clipped(text, max = 60) {
  if (text === null || text === undefined || text === '') return '—';
  if (text.length <= max) return h('span', { class: 'prompt' }, text);
  const node = h('span', { class: 'prompt clipped', title: text, tabindex: 0, role: 'button', 'aria-expanded': 'false' }, `${text.slice(0, max)}…`);
  node.addEventListener('click', () => {
    const open = node.getAttribute('aria-expanded') === 'true';
    node.textContent = open ? `${text.slice(0, max)}…` : text;
    node.setAttribute('aria-expanded', String(!open));
  });
  return node;
}

/** A duration in the operator's words: "42 s", "3 min 12 s", "2 h 5 min". */
export function duration(ms) {
  const seconds = Math.round(ms / 1000);
  if (seconds < 60) return `${seconds} s`;
  const minutes = Math.floor(seconds / 60);
  if (minutes < 60) return `${minutes} min${seconds % 60 === 0 ? '' : ` ${seconds % 60} s`}`;
  const hours = Math.floor(minutes / 60);
  return `${hours} h${minutes % 60 === 0 ? '' : ` ${minutes % 60} min`}`;
}

export function facts(pairs) {
  return h(
    'dl',
    { class: 'facts' },
    pairs.map(([term, value]) => [h('dt', {}, term), h('dd', {}, value)]),
  );
}

export function link(href, text) {
  return h('a', { href }, text);
}

/** A link to an outside page only if it is plain http(s) (the Temporal UI). */
export function externalLink(url, text) {
  return /^https?:\/\//.test(url) ? h('a', { href: url, target: '_blank', rel: 'noopener noreferrer' }, text) : text;
}

/** An agent by its name, its id beside it in grey (an agent the ledger no longer lists: its id alone). */
export function agentName(view) {
  return view.agent_name === null ? h('code', {}, view.agent_id) : h('span', {}, view.agent_name, ' ', h('code', { class: 'muted' }, view.agent_id));
}

/** The workflow engine: its mode, where it answers, and a link to its web UI when there is one. */
export function engineFact(engine) {
  const where = engine.address === null ? engine.mode : `${engine.mode} at ${engine.address}`;
  return engine.ui_url === null ? where : h('span', {}, `${where} — `, externalLink(engine.ui_url, 'Temporal UI'));
}


/** Drops the images whose paths are not in `keep`, revoking their blob: URLs. */
export function forgetImages(keep) {
  for (const [path, entry] of images) {
    if (keep.includes(path)) continue;
    if (entry.url !== null) URL.revokeObjectURL(entry.url);
    images.delete(path);
  }
}


/** Runs an action, shows its outcome in `out`, then renders again. */
export async function act(out, action, done) {
  state.busy = true;
  out.textContent = 'Working…';
  try {
    const result = await action();
    out.textContent = done(result);
    out.className = 'outcome ok';
  } catch (error) {
    out.textContent = explain(error);
    out.className = 'outcome error';
  } finally {
    state.busy = false;
  }
  await refreshView();
}

export const outcomes = new Map();
/** The outcome line of an item: kept across renders so a result stays visible. */
export function outcome(key) {
  if (!outcomes.has(key)) outcomes.set(key, h('p', { class: 'outcome', role: 'status' }));
  return outcomes.get(key);
}

/** Outcomes of items no longer listed (an approved request, a resolved execution), still shown. */
export function leftoverOutcomes(listed) {
  return [...outcomes.entries()].filter(([key, node]) => !listed.includes(key) && node.textContent !== '').map(([, node]) => node);
}

/** A time in the installation's time zone, where the ledger cuts the periods (the browser's own zone if it does not know that one). */
function inZone(iso, zone) {
  try {
    return new Date(iso).toLocaleString(undefined, { timeZone: zone ?? 'UTC' });
  } catch {
    return time(iso);
  }
}

const BUDGET_NAMES = { 'agent.day': 'Agent, day', 'agent.week': 'Agent, week', 'agent.month': 'Agent, month', 'installation.day': 'All agents, day', 'installation.week': 'All agents, week', 'installation.month': 'All agents, month' };
const budgetName = (name) => BUDGET_NAMES[name] ?? (name.startsWith('target:') ? `Target ${name.slice('target:'.length)}, month` : name);

/** A budget standing table: each budget in its current period, shown in the installation's time zone. */
export function standingTable(standing, zone, empty) {
  const rows = standing.map((budget) =>
    h(
      'tr',
      { 'data-budget': budget.name },
      h('td', {}, budgetName(budget.name)),
      h('td', {}, `${inZone(budget.period_start, zone)} – ${inZone(budget.period_end, zone)}`),
      h('td', { class: 'amount' }, budget.limit.display),
      h('td', { class: 'amount' }, budget.spent.display),
      h('td', { class: 'amount' }, budget.held.display),
      h('td', { class: 'amount' }, budget.remaining.display),
      h('td', {}, budget.alert_percentages.map((percent) => `${percent}%`).join(', ')),
    ),
  );
  return table(['Budget', 'Period', 'Limit', 'Spent', 'Held', 'Remaining', 'Alerts at'], rows, empty);
}
