// The console's login page (docs/console.md "Security"): the one-time token arrives in the URL's
// fragment, which a browser never sends to a server; this script posts it once, removes it from
// the address bar and history, and opens the console. Nothing else runs without a session.

const status = document.getElementById('login-status');

async function signIn() {
  const token = location.hash.slice(1);
  history.replaceState(null, '', '/login');
  if (token === '') {
    status.textContent = 'This link holds no login token. Use the link `lexec stack console` printed.';
    return;
  }
  const response = await fetch('/api/login', {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json' },
    body: JSON.stringify({ token }),
    credentials: 'same-origin',
  });
  if (response.ok) {
    location.replace('/');
    return;
  }
  status.textContent =
    'This login link was already used or is not the current one. Each link works once: send the console SIGHUP (or restart `lexec stack console`) for a new one.';
}

if (document.body.dataset.view === 'login' && status !== null) {
  signIn().catch(() => {
    status.textContent = 'The console did not answer; is `lexec stack console` still running?';
  });
}
