// The operator console's entry module (docs/console.md); each view is its own module
// (assets/*-view.js), shared helpers in console-util.js. It polls the console server's JSON
// endpoints every 2 s and renders with DOM APIs only: every string from the stack — prompts,
// purposes, notes, ids — becomes a text node, never markup. Amounts arrive formatted by the
// server (exact micro-units); this script does no arithmetic on money.
//
// The session secret login.js received is kept in this tab's sessionStorage (scoped to the exact
// origin, port included, and to this tab) and sent in `x-lexec-session` on every API request;
// images are fetched the same way and shown through blob: URLs. There is no cookie.

import { agents } from './agents-view.js';
import { approvals } from './approvals-view.js';
import { audit } from './audit-view.js';
import { execution, executions } from './executions-view.js';
import { overview } from './overview-view.js';
import { reconciliation } from './reconciliation-view.js';
import { startLive } from './live.js';
import { SESSION_KEY, explain, h, main, postJson, setRefresh, signedOut, state, updated } from './console-util.js';

const POLL_MS = 2000;
const view = document.body.dataset.view;
let scrolled = false;

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
  if (load === undefined || state.busy) return;
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
  setRefresh(refresh);
  startLive();
  state.poller = setInterval(() => {
    void refresh();
  }, POLL_MS);
  await refresh();
}
