// The console's login page (docs/console.md "Security"): the one-time token arrives in the URL's
// fragment, which a browser never sends to a server; this script asks who signs in (a named
// approver: the name is kept in this browser's localStorage to fill the form next time), posts both once, removes it from
// the address bar and history, keeps the session secret the console answers with in this tab's
// sessionStorage (scoped to the exact origin, port included — never a cookie, which every port
// on 127.0.0.1 would receive) and opens the console.

const SESSION_KEY = 'lexec-console-session';
const NEW_LINK = 'Each link works once, within 10 minutes: `kill -USR1 <pid of lexec stack console>` prints a new one.';
const status = document.getElementById('login-status');

const NAME_KEY = 'lexec-console-approver-name';
// Read once and taken out of the address bar at once: the token never stays in history.
const token = location.hash.slice(1);
history.replaceState(null, '', '/login');

async function signIn(name) {
  if (token === '') {
    status.textContent = `This link holds no login token. Use a link \`lexec stack console\` printed. ${NEW_LINK}`;
    return;
  }
  const response = await fetch('/api/login', {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json' },
    body: JSON.stringify({ token, name }),
    credentials: 'omit',
  });
  const data = await response.json().catch(() => null);
  if (response.ok && typeof data?.session === 'string') {
    sessionStorage.setItem(SESSION_KEY, data.session);
    localStorage.setItem(NAME_KEY, name);
    location.replace('/');
    return;
  }
  if (response.status === 400) {
    status.textContent = 'The name was refused: 1 to 100 characters, and nothing that looks like a secret.';
    return;
  }
  status.textContent = `This login link was already used, has expired, or is not the current one. ${NEW_LINK}`;
}

const form = document.getElementById('login-form');
const nameInput = document.getElementById('approver-name');
if (document.body.dataset.view === 'login' && status !== null && form !== null && nameInput !== null) {
  nameInput.value = localStorage.getItem(NAME_KEY) ?? '';
  nameInput.focus();
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    const name = nameInput.value.trim();
    if (name === '') return;
    status.textContent = 'Signing in…';
    signIn(name).catch(() => {
      status.textContent = 'The console did not answer; is `lexec stack console` still running?';
    });
  });
}
