// The console's login page (docs/console.md "Security"): the one-time token arrives in the URL's
// fragment, which a browser never sends to a server; this script posts it once, removes it from
// the address bar and history, keeps the session secret the console answers with in this tab's
// sessionStorage (scoped to the exact origin, port included — never a cookie, which every port
// on 127.0.0.1 would receive) and opens the console.

const SESSION_KEY = 'lexec-console-session';
const NEW_LINK = 'Each link works once, within 10 minutes: `kill -USR1 <pid of lexec stack console>` prints a new one.';
const status = document.getElementById('login-status');

async function signIn() {
  const token = location.hash.slice(1);
  history.replaceState(null, '', '/login');
  if (token === '') {
    status.textContent = `This link holds no login token. Use a link \`lexec stack console\` printed. ${NEW_LINK}`;
    return;
  }
  const response = await fetch('/api/login', {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json' },
    body: JSON.stringify({ token }),
    credentials: 'omit',
  });
  const data = await response.json().catch(() => null);
  if (response.ok && typeof data?.session === 'string') {
    sessionStorage.setItem(SESSION_KEY, data.session);
    location.replace('/');
    return;
  }
  status.textContent = `This login link was already used, has expired, or is not the current one. ${NEW_LINK}`;
}

if (document.body.dataset.view === 'login' && status !== null) {
  signIn().catch(() => {
    status.textContent = 'The console did not answer; is `lexec stack console` still running?';
  });
}
