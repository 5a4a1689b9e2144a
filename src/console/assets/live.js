// The console's live view of the ledger (docs/console.md "Live events"): it reads the console's
// Server-Sent Events stream (`/api/live`) with fetch — EventSource cannot send the session header —
// and keeps, on every page: the count of requests waiting for a human in the navigation and the
// tab title, a small feed of the latest events, and (opt-in) a browser notification for each new
// request that waits for a human. Events carry no prompt; every string becomes a text node.

import { SESSION_KEY, h, refreshNow, time } from './console-util.js';

const NOTIFY_KEY = 'lexec-console-notify';
const FEED_SIZE = 8;
const RETRY_MS = 3000;
const baseTitle = document.title;
let stopped = false;

/** The count beside "Approvals" in the navigation, made once. */
function countBadge() {
  let badge = document.getElementById('approvals-count');
  if (badge === null) {
    badge = h('span', { id: 'approvals-count', class: 'count', hidden: true, 'aria-label': 'requests waiting for approval' });
    document.querySelector('nav a[href="/approvals"]')?.append(' ', badge);
  }
  return badge;
}

function showCount(count) {
  const badge = countBadge();
  if (count === null || count === 0) {
    badge.hidden = true;
    badge.textContent = '';
    document.title = baseTitle;
    return;
  }
  badge.hidden = false;
  badge.textContent = String(count);
  document.title = `(${count}) ${baseTitle}`;
}

/** The feed of events as they happen, beside the view (outside `main`, so a view's refresh keeps it). */
function feed() {
  let list = document.getElementById('live-events');
  if (list === null) {
    list = h('ol', { id: 'live-events', reversed: true });
    document.body.append(h('aside', { class: 'live', 'aria-label': 'Live ledger events' }, h('h2', {}, 'Live'), notifyToggle(), h('p', { id: 'live-status', class: 'muted' }, 'Connecting…'), list));
  }
  return list;
}

const EVENT_WORDS = {
  'authorization.requested': 'requested',
  'approval.waiting': 'waits for approval',
  'authorization.approved': 'approved',
  'authorization.denied': 'denied',
  'authorization.expired': 'expired',
  'authorization.cancelled': 'cancelled',
  'authorization.refused': 'refused',
  'authorization.settled': 'settled',
  'authorization.released': 'released',
};

function eventLine(event) {
  const who = event.agent_name ?? event.agent_id ?? 'the ledger';
  const what = EVENT_WORDS[event.type] ?? event.type;
  const reason = typeof event.details.reason === 'string' ? ` (${event.details.reason})` : '';
  return h('li', { 'data-event-type': event.type }, h('time', {}, time(event.at)), ' ', h('strong', {}, who), ` ${what}${reason}`, event.amount === null ? '' : ` ${event.amount.display}`);
}

/* ---------- notifications (opt-in) ---------- */

const notifying = () => localStorage.getItem(NOTIFY_KEY) === 'on' && 'Notification' in window && Notification.permission === 'granted';

function notifyLabel() {
  if (!('Notification' in window)) return 'Notifications unsupported';
  if (Notification.permission === 'denied') return 'Notifications blocked';
  return notifying() ? 'Notifications on' : 'Notify me of approvals';
}

/** The opt-in: permission is asked only on this click; the choice is remembered in localStorage. */
function notifyToggle() {
  const button = h('button', { type: 'button', id: 'notify-toggle', 'aria-pressed': String(notifying()) }, notifyLabel());
  button.addEventListener('click', async () => {
    if (!('Notification' in window)) return;
    if (notifying()) localStorage.setItem(NOTIFY_KEY, 'off');
    else if ((await Notification.requestPermission()) === 'granted') localStorage.setItem(NOTIFY_KEY, 'on');
    button.textContent = notifyLabel();
    button.setAttribute('aria-pressed', String(notifying()));
  });
  return button;
}

function notify(event) {
  if (!notifying()) return;
  const who = event.agent_name ?? event.agent_id ?? 'an agent';
  const notification = new Notification(`Approval waiting: ${who}${event.amount === null ? '' : `, ${event.amount.display}`}`, {
    body: event.target_id === null ? 'A request waits for a human.' : `For ${event.target_id}.`,
    tag: event.authorization_id ?? undefined,
  });
  notification.addEventListener('click', () => {
    window.focus();
    location.assign('/approvals');
  });
}

/* ---------- the stream ---------- */

function received(message) {
  document.getElementById('live-status').textContent = message.available ? 'Following the ledger.' : "The profile's stack is not reachable; trying again.";
  if (message.available) showCount(message.pending_approvals);
  const list = feed();
  for (const event of message.events) {
    list.prepend(eventLine(event));
    if (event.type === 'approval.waiting') notify(event);
  }
  while (list.children.length > FEED_SIZE) list.lastElementChild.remove();
  // Something changed: the view shows it now rather than at its next poll.
  if (message.events.length > 0) void refreshNow();
}

/** Parses the stream's `event:`/`data:` blocks (the SSE format) and hands on each `ledger` message. */
async function follow() {
  const secret = sessionStorage.getItem(SESSION_KEY);
  if (secret === null) return;
  const response = await fetch('/api/live', { headers: { 'x-lexec-session': secret, accept: 'text/event-stream' }, credentials: 'omit' });
  if (!response.ok || response.body === null) throw new Error(`live stream: status ${response.status}`);
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buffer += value;
    let end;
    while ((end = buffer.indexOf('\n\n')) !== -1) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      const lines = block.split('\n');
      const type = lines.find((line) => line.startsWith('event: '))?.slice(7);
      const data = lines.filter((line) => line.startsWith('data: ')).map((line) => line.slice(6)).join('\n');
      if (type === 'ledger' && data !== '') received(JSON.parse(data));
    }
  }
}

/** Follows the stream for as long as the tab is signed in, again after a break. */
export function startLive() {
  feed();
  const loop = async () => {
    while (!stopped && sessionStorage.getItem(SESSION_KEY) !== null) {
      try {
        await follow();
      } catch {
        // The console restarted or the network broke: the next attempt says so if it persists.
      }
      const status = document.getElementById('live-status');
      if (status !== null) status.textContent = 'Reconnecting…';
      await new Promise((resolve) => setTimeout(resolve, RETRY_MS));
    }
    // Signed out: nothing live is shown any more.
    document.querySelector('aside.live')?.remove();
    showCount(null);
  };
  void loop();
}

export function stopLive() {
  stopped = true;
}
