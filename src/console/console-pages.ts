/*
 * The console's HTML: small shells the script fills in (docs/console.md). They hold no data from
 * the stack and no secret — only the view's name, the execution id of a detail page (checked
 * against its pattern by the route) and the console's profile name (a checked profile name) — so
 * a shell is harmless without a session and is served to any request that passes the Host check;
 * nothing attacker-influenced is ever written into markup: the script renders data with DOM text
 * nodes, and asks for a session only when it calls the API.
 */

export const CONSOLE_VIEWS = ['overview', 'executions', 'approvals', 'reconciliation', 'agents', 'audit', 'spend'] as const;
export type ConsoleView = (typeof CONSOLE_VIEWS)[number] | 'execution';

const NAV: readonly (readonly [string, string, ConsoleView])[] = [
  ['/', 'Overview', 'overview'],
  ['/executions', 'Executions', 'executions'],
  ['/approvals', 'Approvals', 'approvals'],
  ['/reconciliation', 'Reconciliation', 'reconciliation'],
  ['/agents', 'Agents and policies', 'agents'],
  ['/audit', 'Audit', 'audit'],
  ['/spend', 'Spend', 'spend'],
];

const SAFE = /^[A-Za-z0-9_-]*$/;

function head(title: string, script: string, extra = ''): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${title} · lexec console</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="/assets/console.css">
${extra}<script type="module" src="${script}"></script>
</head>`;
}

/** A view's shell: the profile, navigation, a status line, and an empty main the script renders into. */
export function consolePage(view: ConsoleView, profile: string, executionId: string | null): string {
  if (!SAFE.test(profile) || (executionId !== null && !SAFE.test(executionId))) throw new Error('unsafe text for a console page');
  const current = view === 'execution' ? 'executions' : view;
  const links = NAV.map(([href, label, name]) => `<a href="${href}"${name === current ? ' aria-current="page"' : ''}>${label}</a>`).join('\n');
  const title = NAV.find(([, , name]) => name === current)?.[1] ?? 'Console';
  // The Spend view has its own script (assets/spend-view.js); console.js leaves its main to it.
  const extra = view === 'spend' ? '<script type="module" src="/assets/spend-view.js"></script>\n' : '';
  return `${head(title, '/assets/console.js', extra)}
<body data-view="${view}"${executionId === null ? '' : ` data-execution-id="${executionId}"`}>
<header>
<strong class="brand">lexec console</strong>
<span class="profile">profile <strong id="profile">${profile}</strong></span>
<nav>
${links}
</nav>
<span id="updated" class="muted" aria-live="polite"></span>
<button type="button" id="logout">Sign out</button>
</header>
<main id="main"><p class="muted">Loading…</p></main>
</body>
</html>
`;
}

/**
 * The login page: it asks who signs in (the name every approval and denial of this session is
 * recorded under: a named approver), then its script posts the token from the URL's fragment
 * (never sent to a server by the browser) with the name.
 */
export function loginPage(): string {
  return `${head('Sign in', '/assets/login.js')}
<body data-view="login">
<main id="main">
<h1>lexec console</h1>
<form id="login-form">
<p><label>Your name: <input type="text" name="approver-name" id="approver-name" maxlength="100" autocomplete="name" required></label></p>
<p class="hint">Requests you approve or deny are recorded as decided by this name.</p>
<p><button type="submit">Sign in</button></p>
</form>
<p id="login-status" role="status"></p>
</main>
</body>
</html>
`;
}
