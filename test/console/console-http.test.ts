import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createExecutorClient } from '../../src/executor/client/executor-client.js';
import { createLedgerClient } from '../../src/ledger/client/ledger-client.js';
import { expectFailure, expectResult, type CliRun } from '../support/cli.js';
import { errorOf, rawRequest, signIn as signInWith, startConsoleProcess, stopWithoutSecrets, type ConsoleProcess, type RawResponse } from '../support/console-process.js';
import { startRunningStack, type RunningStack } from '../support/running-stack.js';
import { addStackProfile } from '../support/stack-home.js';
import { MAX_JSON_DEPTH } from '../../src/config/json-depth.js';
import { nestedJson, shapeLevels, tooDeepPath } from '../support/nested-json.js';

/*
 * The console's HTTP surface without a browser: the real `lexec stack console` child against a
 * real sandbox stack, spoken to with raw HTTP so Host, Origin, Cookie and the session header are
 * exactly what each test sets. Also the executor's list route the console reads.
 */

let stack: RunningStack;
let consoleProcess: ConsoleProcess;
const bodies: string[] = [];
const runs: CliRun[] = [];
/** Every session secret the tests obtained: none may reach the console's output. */
const sessionSecrets: string[] = [];

async function signIn(name?: string): Promise<string> {
  const secret = await signInWith(consoleProcess.origin, await consoleProcess.newLogin(), name);
  sessionSecrets.push(secret);
  return secret;
}

async function send(method: string, path: string, options: { headers?: Record<string, string>; body?: unknown; rawBody?: string } = {}): Promise<RawResponse> {
  const response = await rawRequest(consoleProcess.origin, method, path, options);
  bodies.push(response.body, JSON.stringify(response.headers));
  return response;
}


beforeAll(async () => {
  stack = await startRunningStack();
  consoleProcess = await startConsoleProcess(stack);
}, 180_000);

afterAll(async () => {
  const { stdout, stderr } = await stopWithoutSecrets(stack, consoleProcess, [...bodies, ...runs.map((run) => run.stdout + run.stderr)]);
  // Neither a login token (the first one, or any printed after SIGUSR1) nor a session secret
  // reaches the console's log; session secrets are not on stdout either.
  const tokens = consoleProcess.loginUrls().map((url) => new URL(url).hash.slice(1));
  expect(tokens.length).toBeGreaterThan(5);
  for (const token of tokens) expect(stderr).not.toContain(token);
  expect(sessionSecrets.length).toBeGreaterThan(5);
  for (const secret of sessionSecrets) expect(stdout + stderr).not.toContain(secret);
}, 120_000);

describe('lexec stack console over plain HTTP', () => {
  it('prints its loopback address and a login link whose token is in the fragment', () => {
    expect(consoleProcess.origin).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(consoleProcess.loginUrl).toMatch(new RegExp(`^${consoleProcess.origin}/login#[A-Za-z0-9_-]{43}$`));
  });

  it('without a session the API answers 401; shells, script and stylesheet hold no secret and are served', async () => {
    const api = await send('GET', '/api/overview');
    expect(api.status).toBe(401);
    expect(errorOf(api)).toEqual({ code: 'unauthorized', reason_code: 'session_missing' });
    // The same route spelled differently is still the API.
    expect((await send('GET', '/%61pi/overview')).status).toBe(401);
    expect((await send('GET', '/api/executions/exe_0123456789abcdef0123456789abcdef/artifacts/art_00000000-0000-0000-0000-000000000000')).status).toBe(401);
    expect((await send('POST', '/api/approvals/0b7e6c1a-2f4d-4c8e-9a51-3d2f8e7c6b10/approve', { headers: { origin: consoleProcess.origin }, body: {} })).status).toBe(401);
    const page = await send('GET', '/executions');
    expect(page.status).toBe(200);
    expect(page.headers['content-type']).toContain('text/html');
    expect(page.body).toContain('profile <strong id="profile">sandbox</strong>');
    expect(page.body).not.toMatch(/<meta name="lexec|[A-Za-z0-9_-]{43}/);
    expect((await send('GET', '/assets/console.js')).status).toBe(200);
    const login = await send('GET', '/login');
    expect(login.status).toBe(200);
    expect(login.headers['content-security-policy']).toContain("default-src 'self'");
    expect(login.headers['content-security-policy']).toContain("img-src 'self' data: blob:");
    expect(login.headers['content-security-policy']).toContain("frame-ancestors 'none'");
    expect(login.headers).toMatchObject({ 'x-content-type-options': 'nosniff', 'referrer-policy': 'no-referrer', 'cache-control': 'no-store' });
  });

  it("a login token works once, from the console's own origin only, and answers the session secret in its body — no cookie", async () => {
    const token = new URL(await consoleProcess.newLogin()).hash.slice(1);
    const forged = await send('POST', '/api/login', { headers: { origin: 'http://evil.example' }, body: { token, name: 'Ada Lovelace' } });
    expect(forged.status).toBe(403);
    expect(errorOf(forged)).toEqual({ code: 'forbidden', reason_code: 'cross_site_request' });
    expect((await send('POST', '/api/login', { headers: { origin: consoleProcess.origin }, body: { token: 'A'.repeat(43), name: 'Ada Lovelace' } })).status).toBe(401);

    const login = await send('POST', '/api/login', { headers: { origin: consoleProcess.origin }, body: { token, name: 'Ada Lovelace' } });
    expect(login.status).toBe(200);
    expect(login.headers['set-cookie']).toBeUndefined();
    const { signed_in: signedIn, session } = JSON.parse(login.body) as { signed_in: boolean; session: string };
    expect(signedIn).toBe(true);
    expect(session).toMatch(/^[A-Za-z0-9_-]{43}$/);
    sessionSecrets.push(session);

    const again = await send('POST', '/api/login', { headers: { origin: consoleProcess.origin }, body: { token, name: 'Ada Lovelace' } });
    expect(again.status).toBe(401);
    expect(errorOf(again)).toEqual({ code: 'unauthorized', reason_code: 'login_token_invalid' });
    // The session works, in its header.
    expect((await send('GET', '/api/overview', { headers: { 'x-lexec-session': session } })).status).toBe(200);
  });

  it('the session is no cookie: replayed as one (what any listener on 127.0.0.1 would receive), with any Origin, it reads and approves nothing', async () => {
    const secret = await signIn();
    const approve = '/api/approvals/0b7e6c1a-2f4d-4c8e-9a51-3d2f8e7c6b10/approve';
    for (const origin of [undefined, 'http://127.0.0.1:8233', consoleProcess.origin]) {
      const headers = { cookie: `lexec_console_session=${secret}`, ...(origin === undefined ? {} : { origin }) };
      for (const path of ['/api/overview', '/api/approvals', '/api/executions']) {
        const read = await send('GET', path, { headers });
        expect(read.status, `${path} ${String(origin)}`).toBe(401);
        expect(errorOf(read)).toEqual({ code: 'unauthorized', reason_code: 'session_missing' });
      }
      expect([401, 403], String(origin)).toContain((await send('POST', approve, { headers, body: {} })).status);
      // The shells give nothing away to such a client either.
      const shell = await send('GET', '/approvals', { headers });
      expect(shell.body).not.toContain(secret);
    }
  });

  it('a Host other than its own 127.0.0.1:PORT is refused, session or not (DNS rebinding)', async () => {
    const session = await signIn();
    const port = new URL(consoleProcess.origin).port;
    for (const host of [`evil.example:${port}`, `localhost:${port}`, '127.0.0.1']) {
      for (const path of ['/api/overview', '/']) {
        const refused = await send('GET', path, { headers: { host, 'x-lexec-session': session } });
        expect(refused.status, host).toBe(421);
        expect(errorOf(refused)).toEqual({ code: 'misdirected_request', reason_code: 'wrong_host' });
      }
    }
  });

  it('a state-changing request needs the own Origin (or Sec-Fetch-Site: same-origin) and the session secret', async () => {
    const session = await signIn();
    const path = '/api/approvals/0b7e6c1a-2f4d-4c8e-9a51-3d2f8e7c6b10/approve';
    for (const origin of ['http://127.0.0.1.evil.example', 'http://127.0.0.1:8233', 'http://localhost:8233']) {
      const crossSite = await send('POST', path, { headers: { 'x-lexec-session': session, origin }, body: {} });
      expect(crossSite.status, origin).toBe(403);
      expect(errorOf(crossSite).reason_code).toBe('cross_site_request');
    }
    expect((await send('POST', path, { headers: { 'x-lexec-session': session, 'sec-fetch-site': 'cross-site' }, body: {} })).status).toBe(403);
    expect((await send('POST', path, { headers: { 'x-lexec-session': session, 'sec-fetch-site': 'same-site' }, body: {} })).status).toBe(403);
    expect((await send('POST', path, { headers: { 'x-lexec-session': session }, body: {} })).status).toBe(403);
    const noSession = await send('POST', path, { headers: { origin: consoleProcess.origin }, body: {} });
    expect(errorOf(noSession)).toEqual({ code: 'unauthorized', reason_code: 'session_missing' });
    const wrong = await send('POST', path, { headers: { origin: consoleProcess.origin, 'x-lexec-session': 'B'.repeat(43) }, body: {} });
    expect(errorOf(wrong)).toEqual({ code: 'unauthorized', reason_code: 'session_invalid' });
    // Past every check, the ledger answers: no such authorization.
    const passed = await send('POST', path, { headers: { 'x-lexec-session': session, 'sec-fetch-site': 'same-origin' }, body: {} });
    expect(passed.status).toBe(404);
    expect(errorOf(passed)).toEqual({ code: 'not_found', reason_code: 'ledger_not_found' });
  });

  it('sign-out ends the session on the server: the old secret is refused afterwards', async () => {
    const session = await signIn();
    const other = await signIn();
    expect((await send('GET', '/api/agents', { headers: { 'x-lexec-session': session } })).status).toBe(200);
    const out = await send('POST', '/api/logout', { headers: { origin: consoleProcess.origin, 'x-lexec-session': session }, body: {} });
    expect(out.status).toBe(200);
    expect(JSON.parse(out.body)).toEqual({ signed_in: false });
    const after = await send('GET', '/api/agents', { headers: { 'x-lexec-session': session } });
    expect(after.status).toBe(401);
    expect(errorOf(after)).toEqual({ code: 'unauthorized', reason_code: 'session_invalid' });
    expect((await send('POST', '/api/logout', { headers: { origin: consoleProcess.origin, 'x-lexec-session': session }, body: {} })).status).toBe(401);
    // Another session lives on.
    expect((await send('GET', '/api/agents', { headers: { 'x-lexec-session': other } })).status).toBe(200);
  });

  it('bad input is refused with field paths and never echoed', async () => {
    const session = await signIn();
    const filter = await send('GET', '/api/executions?state=%3Cscript%3Ebogus', { headers: { 'x-lexec-session': session } });
    expect(filter.status).toBe(400);
    expect(errorOf(filter)).toMatchObject({ code: 'invalid_request', fields: ['state'] });
    expect(filter.body).not.toContain('bogus');
    const resolve = await send('POST', '/api/reconciliations/exe_0123456789abcdef0123456789abcdef/resolve', {
      headers: { 'x-lexec-session': session, origin: consoleProcess.origin },
      body: { resolution: 'settle', images_billed: 99, note: 'secret-looking-note' },
    });
    expect(resolve.status).toBe(400);
    expect(errorOf(resolve).fields).toEqual(['images_billed']);
    expect(resolve.body).not.toContain('secret-looking-note');
    // A body nested thousands deep, to the login exchange (no session needed) and to a route
    // behind the session: refused with the path of its first too-deep value, not a 500.
    const levels = shapeLevels('mixed', 5000, 'token');
    for (const [path, headers] of [
      ['/api/login', { origin: consoleProcess.origin }],
      ['/api/reconciliations/exe_0123456789abcdef0123456789abcdef/resolve', { 'x-lexec-session': session, origin: consoleProcess.origin }],
    ] as const) {
      const deep = await send('POST', path, { headers: { ...headers, 'content-type': 'application/json' }, rawBody: nestedJson(levels) });
      expect([deep.status, errorOf(deep)]).toEqual([400, { code: 'invalid_request', reason_code: 'nesting_too_deep', fields: [tooDeepPath(levels, MAX_JSON_DEPTH)] }]);
    }
    expect(consoleProcess.output().stderr).not.toContain('internal_error');
  });

  it('suspend and resume: bad input is refused with field paths, an unknown agent is 404, a repeat changes nothing (issue 27 item 1)', async () => {
    const session = await signIn();
    const headers = { 'x-lexec-session': session, origin: consoleProcess.origin };
    const long = await send('POST', `/api/agents/agt_${randomUUID()}/suspend`, { headers, body: { reason: 'x'.repeat(501) } });
    expect([long.status, errorOf(long).fields]).toEqual([400, ['reason']]);
    const unknown = await send('POST', `/api/agents/agt_${randomUUID()}/suspend`, { headers, body: {} });
    expect([unknown.status, errorOf(unknown).code]).toEqual([404, 'not_found']);
    const extra = await send('POST', `/api/agents/agt_${randomUUID()}/resume`, { headers, body: { reason: 'no' } });
    expect([extra.status, errorOf(extra).fields]).toEqual([400, ['reason']]);
    const { agents } = JSON.parse((await send('GET', '/api/agents', { headers: { 'x-lexec-session': session } })).body) as { agents: { agent_id: string; status: string }[] };
    const id = agents[0]?.agent_id ?? '';
    expect(agents[0]?.status).toBe('active');
    const resumed = await send('POST', `/api/agents/${id}/resume`, { headers, body: {} });
    expect(JSON.parse(resumed.body)).toMatchObject({ agent_id: id, status: 'active', changed: false, cancelled_authorizations: 0 });
    // A cross-site form cannot suspend anyone.
    const crossSite = await send('POST', `/api/agents/${id}/suspend`, { headers: { ...headers, origin: 'http://127.0.0.1:1' }, body: {} });
    expect(crossSite.status).toBe(403);
    expect(JSON.parse((await send('GET', '/api/agents', { headers: { 'x-lexec-session': session } })).body)).toMatchObject({ agents: [{ status: 'active' }] });
  });

  it('lists executions newest first with exact amounts, and pages through the executor\'s GET /v1/executions', async () => {
    for (const prompt of ['a lighthouse', 'a harbour']) {
      const run = await stack.lexec(['run', prompt, '--out', `${stack.home}/out-${prompt.replace(' ', '-')}`, '--json'], { timeoutMs: 120_000 });
      runs.push(run);
      expectResult(run);
    }
    const session = await signIn();
    const listed = await send('GET', '/api/executions?state=succeeded', { headers: { 'x-lexec-session': session } });
    expect(listed.status).toBe(200);
    const page = JSON.parse(listed.body) as { executions: { execution_id: string; state: string; cost: { units: string; display: string } }[] };
    expect(page.executions).toHaveLength(2);
    expect(page.executions[0]).toMatchObject({ state: 'succeeded', cost: { units: '3000', display: '0.003000 USD' } });

    // An operator's view across agents: the reconciliation capability (every agent holds the caller one).
    const executor = createExecutorClient({ url: stack.executorUrl, token: await stack.capability('reconciliation') });
    const first = await executor.executions({ limit: 1 });
    expect(first.executions.map((execution) => execution.execution_id)).toEqual([page.executions[0]?.execution_id]);
    expect(first.next_before).toBe(page.executions[0]?.execution_id);
    const second = await executor.executions({ limit: 1, before: first.next_before ?? '' });
    expect(second.executions.map((execution) => execution.execution_id)).toEqual([page.executions[1]?.execution_id]);
    expect((await executor.executions({ state: 'failed' })).executions).toEqual([]);
    const caller = createExecutorClient({ url: stack.executorUrl, token: await stack.capability('caller') });
    await expect(caller.executions({ limit: 1 })).rejects.toMatchObject({ code: expect.stringMatching(/^executor_(unauthorized|forbidden)$/) as unknown });
    const detail = await caller.executionDetail(first.executions[0]?.execution_id ?? '');
    expect(Object.values(detail.timeline).filter((at) => at !== null)).toHaveLength(5);
    expect(detail.timeline.released_at).toBeNull();
    await expect(executor.executions({ limit: 101 })).rejects.toMatchObject({ code: 'executor_invalid_request', issues: [{ path: 'limit' }] });
  }, 180_000);

  it('serves the ledger\'s spend report to the Spend view, and the same report as CSV (issue 28 item 5)', async () => {
    type Tally = { settled_units: string; settled_count: number; held_units: string };
    type Report = { by: string; groups: (Tally & { group: string; parts?: (Tally & { part: string; label: string })[] })[]; total: Tally };
    const session = await signIn();
    const get = (path: string) => send('GET', path, { headers: { 'x-lexec-session': session } });
    expect((await send('GET', '/api/spend?by=day')).status).toBe(401);
    const answer = await get('/api/spend?by=day&split=agent');
    expect(answer.status, answer.body).toBe(200);
    const report = JSON.parse(answer.body) as Report;
    // The executions above settled: the view's report is the ledger's, as `lexec ledger spend` reads it.
    const cli = await stack.lexec(['ledger', 'spend', '--by', 'day', '--json']);
    runs.push(cli);
    const fromCli = expectResult(cli) as Report;
    expect(BigInt(report.total.settled_units)).toBeGreaterThanOrEqual(6000n);
    expect(report.total).toEqual(fromCli.total);
    expect(report.groups.map((group) => group.group)).toEqual(fromCli.groups.map((group) => group.group));
    for (const group of report.groups) {
      expect(group.parts?.reduce((sum, part) => sum + BigInt(part.settled_units), 0n)).toBe(BigInt(group.settled_units));
      expect(group.parts?.map((part) => part.part)).toContain(stack.agentId);
    }

    const csv = await get('/api/spend.csv?by=agent');
    expect(csv.status).toBe(200);
    expect(csv.headers['content-type']).toBe('text/csv; charset=utf-8');
    expect(csv.headers['content-disposition']).toBe('attachment; filename="lexec-spend-by-agent.csv"');
    const cliCsv = await stack.lexec(['ledger', 'spend', '--by', 'agent', '--csv']);
    runs.push(cliCsv);
    expect(csv.body).toBe(`${cliCsv.stdout}\r\n`);
    expect(csv.body.split('\r\n')[0]).toBe('group,label,settled_usd,settled_units,settled_count,held_usd,held_units,held_count');

    for (const [query, fields] of [
      ['?by=year', ['by']],
      ['?by=day&split=day', ['split']],
      ['?by=day&since=2026-02-30', ['since']],
      ['?by=day&since=2026-12-01&until=2026-11-01', ['until']],
    ] as const) {
      const bad = await get(`/api/spend${query}`);
      expect([query, bad.status, errorOf(bad).fields]).toEqual([query, 400, fields]);
    }
    const shell = await send('GET', '/spend');
    expect(shell.status).toBe(200);
    expect(shell.body).toContain('<a href="/spend" aria-current="page">Spend</a>');
    expect(shell.body).toContain('<script type="module" src="/assets/spend-view.js"></script>');
    const script = await send('GET', '/assets/spend-view.js');
    expect([script.status, script.headers['content-type']]).toEqual([200, 'text/javascript; charset=utf-8']);
  }, 120_000);

  it('keeps acting on the profile it started for after `lexec stack select` picks another', async () => {
    await addStackProfile(stack.home, { profile: 'other' });
    const selected = await stack.lexec(['stack', 'select', 'other', '--json']);
    runs.push(selected);
    expectResult(selected);
    try {
      const session = await signIn();
      const headers = { 'x-lexec-session': session };
      const overview = await send('GET', '/api/overview', { headers });
      expect(overview.status).toBe(200);
      // Work in flight and the engine, as `stack status` reads them (issue 26 item 10).
      expect(JSON.parse(overview.body)).toMatchObject({ profile: 'sandbox', usable: true, executions_in_flight: 0, pending_approvals: 0, engine: { mode: 'embedded', address: null, ui_url: null } });
      expect((await send('GET', '/api/executions', { headers })).status).toBe(200);
      expect((await send('GET', '/api/reconciliations', { headers })).status).toBe(200);
      expect((await send('GET', '/', { headers })).body).toContain('profile <strong id="profile">sandbox</strong>');
      // An approval still reaches the sandbox stack's ledger (which knows no such authorization).
      const approve = await send('POST', '/api/approvals/0b7e6c1a-2f4d-4c8e-9a51-3d2f8e7c6b10/approve', { headers: { ...headers, origin: consoleProcess.origin }, body: {} });
      expect(errorOf(approve)).toEqual({ code: 'not_found', reason_code: 'ledger_not_found' });
    } finally {
      runs.push(await stack.lexec(['stack', 'select', 'sandbox', '--json']));
    }
  }, 120_000);

  it('answers 503 stack_unavailable while the stack is stopped, and serves it again once it is back', async () => {
    const session = await signIn();
    const headers = { 'x-lexec-session': session };
    const stopped = await stack.lexec(['stack', 'stop', '--profile', 'sandbox', '--json'], { timeoutMs: 60_000 });
    runs.push(stopped);
    expectResult(stopped);
    for (const path of ['/api/executions', '/api/approvals', '/api/reconciliations', '/api/agents']) {
      const down = await send('GET', path, { headers });
      expect(down.status, path).toBe(503);
      expect(errorOf(down)).toMatchObject({ code: 'stack_unavailable', reason_code: 'stack_not_running' });
    }
    // Not usable, but what waits in the stopped stack's databases is still shown.
    const overview = JSON.parse((await send('GET', '/api/overview', { headers })).body) as { usable: boolean; executions_in_flight: number | null; pending_approvals: number | null };
    expect(overview).toMatchObject({ usable: false, executions_in_flight: 0, pending_approvals: 0 });
    await stack.restart();
    expect((await send('GET', '/api/executions', { headers })).status).toBe(200);
    expect(JSON.parse((await send('GET', '/api/overview', { headers })).body)).toMatchObject({ profile: 'sandbox', usable: true });
  }, 180_000);

  it('SIGHUP stops a console like SIGTERM (exit 0): the terminal that could read a new link is gone', async () => {
    const second = await startConsoleProcess(stack);
    const session = await signInWith(second.origin, second.loginUrl);
    sessionSecrets.push(session);
    expect((await rawRequest(second.origin, 'GET', '/api/agents', { headers: { 'x-lexec-session': session } })).status).toBe(200);
    expect(await second.stop('SIGHUP')).toBe(0);
    const { stdout, stderr } = second.output();
    expect(stdout.trim().split('\n')).toHaveLength(1);
    expect(stdout + stderr).not.toContain(session);
    expect(stderr).not.toContain(new URL(second.loginUrl).hash.slice(1));
  }, 120_000);

  it('refuses to start for a profile that does not exist (the running one exits 0 on SIGTERM: afterAll)', async () => {
    const missing = await stack.lexec(['stack', 'console', '--profile', 'nowhere', '--json']);
    runs.push(missing);
    expectFailure(missing, 1, 'profile_not_found');
  });
});

describe('named approvers (issue 27 item 5)', () => {
  it('each signed-in name decides as its own approver credential; the loser of a race is told who decided first and when', async () => {
    const ada = await signIn('Ada Lovelace');
    const grace = await signIn('Grace Hopper');
    // Two images need an approver: the threshold below their cost (an earlier test raised it).
    type AgentsAnswer = { agents: { agent_id: string; policy: { version: string; per_authorization_cap: { units: string }; daily_cap: { units: string } } }[] };
    const [agent] = (JSON.parse((await send('GET', '/api/agents', { headers: { 'x-lexec-session': ada } })).body) as AgentsAnswer).agents;
    const lowered = await send('POST', `/api/agents/${agent?.agent_id ?? ''}/policy`, {
      headers: { 'x-lexec-session': ada, origin: consoleProcess.origin },
      body: { per_authorization_cap_units: agent?.policy.per_authorization_cap.units, daily_cap_units: agent?.policy.daily_cap.units, approval_threshold_units: '1000', expect_version: agent?.policy.version },
    });
    expect(lowered.status, lowered.body).toBe(200);
    const pending = await stack.lexec(['run', 'two named cranes', '--count', '2', '--out', join(stack.home, 'out', 'named'), '--no-wait', '--json']);
    runs.push(pending);
    const tokenId = (expectResult(pending) as { authorization: { token_id: string } }).authorization.token_id;
    const decide = (secret: string, verb: 'approve' | 'deny') =>
      send('POST', `/api/approvals/${tokenId}/${verb}`, { headers: { origin: consoleProcess.origin, 'x-lexec-session': secret }, body: {} });

    const won = await decide(grace, 'approve');
    expect(won.status).toBe(200);
    expect(JSON.parse(won.body)).toEqual({ token_id: tokenId, status: 'approved', decided_by_name: 'Grace Hopper' });
    const lost = await decide(ada, 'approve');
    expect(lost.status).toBe(409);
    const refusal = JSON.parse(lost.body) as { error: Record<string, string> };
    expect(refusal.error).toMatchObject({ code: 'already_decided', reason_code: 'ledger_already_decided', decision: 'approved', decided_by_name: 'Grace Hopper' });
    expect(Date.parse(refusal.error.decided_at ?? '')).toBeGreaterThan(Date.now() - 120_000);
    // The CLI says the same, in words.
    const cli = await stack.lexec(['ledger', 'authorizations', 'deny', tokenId, '--json']);
    runs.push(cli);
    expect(expectFailure(cli, 1, 'ledger_already_decided').message).toMatch(/^The request was already approved by Grace Hopper at \d{4}-\d\d-\d\dT[\d:.]+Z; nothing changed\.$/);

    // Each name has its own approver credential, carrying the name.
    const listed = await stack.lexec(['ledger', 'credentials', 'list', '--kind', 'approver', '--json']);
    runs.push(listed);
    const holders = (expectResult(listed) as { credentials: { credential_id: string; holder_name: string | null }[] }).credentials;
    const graceCredential = holders.find((credential) => credential.holder_name === 'Grace Hopper');
    expect(graceCredential?.credential_id).toMatch(/^lexec-console-approver-[0-9a-f]{16}$/);
    expect(holders.some((credential) => credential.holder_name === 'Ada Lovelace')).toBe(true);

    // An operator revokes Grace's credential: the console no longer decides as her, and makes her no new one.
    runs.push(await stack.lexec(['ledger', 'credentials', 'revoke', graceCredential?.credential_id ?? '', '--json']));
    const next = await stack.lexec(['run', 'two more cranes', '--count', '2', '--out', join(stack.home, 'out', 'named-2'), '--no-wait', '--json']);
    runs.push(next);
    const nextToken = (expectResult(next) as { authorization: { token_id: string } }).authorization.token_id;
    const refused = await send('POST', `/api/approvals/${nextToken}/approve`, { headers: { origin: consoleProcess.origin, 'x-lexec-session': grace }, body: {} });
    expect(refused.status).toBe(403);
    expect(errorOf(refused)).toEqual({ code: 'forbidden', reason_code: 'approver_credential_revoked' });
    expect((await decide(ada, 'deny')).status).toBe(409);
    runs.push(await stack.lexec(['ledger', 'authorizations', 'deny', nextToken, '--json']));
  }, 180_000);

  it('refuses a blank or secret-shaped name at login, with its field', async () => {
    for (const name of ['   ', `lexec_admin_${'A'.repeat(43)}`, 'x'.repeat(101)]) {
      const token = new URL(await consoleProcess.newLogin()).hash.slice(1);
      const login = await send('POST', '/api/login', { headers: { origin: consoleProcess.origin }, body: { token, name } });
      expect(login.status).toBe(400);
      expect(errorOf(login).fields).toEqual(['name']);
    }
  });
});


describe("the console as an operator's ledger (issue 28 items 3 and 4)", () => {
  type Row = { execution_id: string; authorization_id: string; prompt: string | null; target_id: string; agent_id: string };
  type ExecutionsAnswer = { executions: Row[]; next_before: string | null; scanned: number };
  type AgentsAnswer = { agents: { agent_id: string; policy: { version: string; per_authorization_cap: { units: string }; daily_cap: { units: string } }; refusals: { details: Record<string, unknown>; event_id: string }[] }[] };
  type Approval = { token_id: string; prompt: string | null; target_id: string | null; client: { waiting: boolean; last_seen_at: string | null; seen_seconds_ago: number | null } };
  type ApprovalsAnswer = { approvals: Approval[]; agents: { agent_id: string; count: number; total: { units: string; display: string }; token_ids: string[] }[] };

  const get = async <T>(session: string, path: string): Promise<T> => {
    const response = await send('GET', path, { headers: { 'x-lexec-session': session } });
    expect(response.status, `${path}: ${response.body}`).toBe(200);
    return JSON.parse(response.body) as T;
  };

  async function setThreshold(session: string, units: string): Promise<void> {
    const [agent] = (await get<AgentsAnswer>(session, '/api/agents')).agents;
    const saved = await send('POST', `/api/agents/${agent?.agent_id ?? ''}/policy`, {
      headers: { 'x-lexec-session': session, origin: consoleProcess.origin },
      body: { per_authorization_cap_units: agent?.policy.per_authorization_cap.units, daily_cap_units: agent?.policy.daily_cap.units, approval_threshold_units: units, expect_version: agent?.policy.version },
    });
    expect(saved.status, saved.body).toBe(200);
  }

  async function pendingRun(prompt: string): Promise<string> {
    const run = await stack.lexec(['run', prompt, '--count', '2', '--out', join(stack.home, 'out', randomUUID()), '--no-wait', '--json']);
    runs.push(run);
    return (expectResult(run) as { authorization: { token_id: string } }).authorization.token_id;
  }

  it('filters executions by agent, target, time and state, searches by execution id, authorization id or prompt, and shows the prompt', async () => {
    const session = await signIn('Ada Lovelace');
    await setThreshold(session, '1000000000');
    const word = `ocelot${randomUUID().slice(0, 8)}`;
    const run = await stack.lexec(['run', `a quiet ${word} at dawn`, '--out', join(stack.home, 'out', word), '--json']);
    runs.push(run);
    expectResult(run);

    const byPrompt = await get<ExecutionsAnswer>(session, `/api/executions?q=${word.toUpperCase()}`);
    expect(byPrompt.executions.map((found) => found.prompt)).toEqual([`a quiet ${word} at dawn`]);
    const row = byPrompt.executions[0] as Row;
    const executionId = row.execution_id;
    expect(run.stdout).toContain(executionId);
    expect((await get<ExecutionsAnswer>(session, `/api/executions?q=${executionId}`)).executions.map((found) => found.execution_id)).toEqual([executionId]);
    expect((await get<ExecutionsAnswer>(session, `/api/executions?q=${row.authorization_id}`)).executions.map((found) => found.execution_id)).toEqual([executionId]);
    const combined = new URLSearchParams({ q: word, agent_id: row.agent_id, target_id: row.target_id, state: 'succeeded', from: new Date(Date.now() - 3_600_000).toISOString(), until: new Date(Date.now() + 60_000).toISOString() });
    expect((await get<ExecutionsAnswer>(session, `/api/executions?${combined.toString()}`)).executions).toHaveLength(1);
    // Each filter alone excludes it when it does not fit.
    for (const [name, value] of [
      ['agent_id', 'agt_00000000-0000-4000-8000-000000000000'],
      ['target_id', 'another:target'],
      ['state', 'failed'],
      ['from', new Date(Date.now() + 60_000).toISOString()],
      ['until', new Date(Date.now() - 3_600_000).toISOString()],
    ] as const) {
      const answer = await get<ExecutionsAnswer>(session, `/api/executions?${new URLSearchParams({ q: word, [name]: value }).toString()}`);
      expect(answer.executions, name).toEqual([]);
    }
    // Unfiltered, the prompt is a column too.
    expect((await get<ExecutionsAnswer>(session, '/api/executions')).executions.find((found) => found.execution_id === executionId)?.prompt).toBe(`a quiet ${word} at dawn`);
    const bad = await send('GET', '/api/executions?from=yesterday&q=' + 'x'.repeat(201), { headers: { 'x-lexec-session': session } });
    expect(bad.status).toBe(400);
    expect(errorOf(bad).fields?.sort()).toEqual(['from', 'q']);

    // The timeline starts with the authorization: requested, decided by the policy (no wait for a human).
    const detail = await get<{ authorization: { token_id: string; requested_at: string; amount: { units: string }; target_id: string; waited_ms: number | null; decided_by: { kind: string } | null } }>(session, `/api/executions/${executionId}`);
    expect(detail.authorization).toMatchObject({ token_id: row.authorization_id, target_id: row.target_id, waited_ms: null, decided_by: { kind: 'policy' } });
    expect(detail.authorization.amount.units).toMatch(/^[1-9]\d*$/);
  }, 180_000);

  it('approval cards show the prompt, the target and whether a client waits; per agent the count and total of a bulk decision; decided requests stay in the history', async () => {
    const ada = await signIn('Ada Lovelace');
    await setThreshold(ada, '1000');
    const prompts = [`two <b>herons</b> ${randomUUID().slice(0, 6)}`, `two herons ${randomUUID().slice(0, 6)}`];
    const tokens = [await pendingRun(prompts[0] ?? ''), await pendingRun(prompts[1] ?? '')];
    let answer = await get<ApprovalsAnswer>(ada, '/api/approvals');
    const cards = tokens.map((token) => answer.approvals.find((approval) => approval.token_id === token));
    expect(cards.map((card) => card?.prompt)).toEqual(prompts);
    expect(cards.every((card) => card?.target_id !== null)).toBe(true);
    // `--no-wait` asked once and left: no client waits on them.
    expect(cards.map((card) => card?.client.waiting)).toEqual([false, false]);

    // The agent asks after the first (as a waiting `lexec run` does): a client waits on it now.
    const agent = createLedgerClient({ url: stack.ledgerUrl, token: await stack.capability('agent') });
    await agent.showAuthorization(tokens[0] ?? '');
    answer = await get<ApprovalsAnswer>(ada, '/api/approvals');
    const seen = answer.approvals.find((approval) => approval.token_id === tokens[0])?.client;
    expect(seen).toMatchObject({ waiting: true });
    expect(seen?.seen_seconds_ago).toBeLessThan(30);
    expect(answer.approvals.find((approval) => approval.token_id === tokens[1])?.client.waiting).toBe(false);

    // Per agent: what "approve all" would decide, with count and exact total.
    const group = answer.agents.find((entry) => entry.agent_id === stack.agentId);
    expect(group?.token_ids).toEqual(expect.arrayContaining(tokens));
    expect(group?.count).toBe(group?.token_ids.length);
    const pending = await createLedgerClient({ url: stack.ledgerUrl, token: await stack.capability('approver') }).pendingApprovals();
    const total = pending.filter((request) => request.agent_id === stack.agentId).reduce((sum, request) => sum + request.amount_units, 0n);
    expect(group?.total.units).toBe(total.toString());

    // Approve the one a client waits on; deny the agent's others (a bulk decision is one request per item), with reasons.
    const decide = (token: string, verb: 'approve' | 'deny', reason: string) => send('POST', `/api/approvals/${token}/${verb}`, { headers: { 'x-lexec-session': ada, origin: consoleProcess.origin }, body: { reason } });
    expect((await decide(tokens[0] ?? '', 'approve', 'the one still waited on')).status).toBe(200);
    for (const token of group?.token_ids.filter((id) => id !== tokens[0]) ?? []) {
      const denied = await decide(token, 'deny', 'stale duplicate');
      expect(denied.status, denied.body).toBe(200);
    }
    type History = { decided: { token_id: string; outcome: string; decided_by: { kind: string; name: string } | null; reason: string | null; prompt: string | null }[] };
    const denied = await get<History>(ada, `/api/approvals/history?outcome=denied&agent_id=${stack.agentId}`);
    expect(denied.decided.find((entry) => entry.token_id === tokens[1])).toMatchObject({ outcome: 'denied', decided_by: { kind: 'person', name: 'Ada Lovelace' }, reason: 'stale duplicate', prompt: prompts[1] });
    expect(denied.decided.some((entry) => entry.token_id === tokens[0])).toBe(false);
    const approved = await get<History>(ada, '/api/approvals/history?outcome=approved');
    expect(approved.decided.find((entry) => entry.token_id === tokens[0])).toMatchObject({ outcome: 'approved', decided_by: { kind: 'person', name: 'Ada Lovelace' }, reason: 'the one still waited on', prompt: prompts[0] });
    // Requests the policy approved at once are no decision of a human: not in the history.
    expect(approved.decided.every((entry) => entry.decided_by?.kind === 'person' || entry.decided_by?.kind === 'credential')).toBe(true);
    expect((await send('GET', '/api/approvals/history?outcome=maybe', { headers: { 'x-lexec-session': ada } })).status).toBe(400);
  }, 180_000);

  it("shows an agent's refused requests, read from the ledger's authorization.refused events", async () => {
    // A request far above the stack's per-authorization cap: refused, and recorded as an event in the request's transaction.
    const agent = createLedgerClient({ url: stack.ledgerUrl, token: await stack.capability('agent') });
    await expect(agent.requestAuthorization({ amountUnits: 1_000_000_000n, purpose: 'far too much' })).rejects.toMatchObject({ code: 'ledger_policy_refused' });
    const session = await signIn();
    const agents = await get<AgentsAnswer>(session, '/api/agents');
    const refusals = agents.agents.find((one) => one.agent_id === stack.agentId)?.refusals ?? [];
    expect(refusals[0]).toMatchObject({
      type: 'authorization.refused',
      details: { reason: 'per_authorization_cap_exceeded', limit: 'per_authorization_cap_units' },
      amount: { units: '1000000000' },
    });
  });

  it('streams ledger events live (Server-Sent Events, with the session): a new request arrives with the count of those waiting; no prompt, no capability', async () => {
    const session = await signIn();
    expect((await send('GET', '/api/live')).status).toBe(401);
    const stream = await openStream(consoleProcess.origin, session);
    try {
      const first = await stream.next((message) => message.available);
      const before = first.pending_approvals ?? 0;
      const prompt = `a secret-free ${randomUUID()} heron`;
      const token = await pendingRun(prompt);
      const arrived = await stream.next((message) => message.events.some((event) => event.type === 'approval.waiting' && event.authorization_id === token));
      expect(arrived.pending_approvals).toBe(before + 1);
      expect(arrived.events.find((event) => event.authorization_id === token)).toMatchObject({ agent_id: stack.agentId, amount: { units: expect.stringMatching(/^\d+$/) as unknown } });
      bodies.push(stream.text());
      expect(stream.text()).not.toContain(prompt);
      expect(stream.text()).not.toContain('heron');
      runs.push(await stack.lexec(['ledger', 'authorizations', 'deny', token, '--json']));
    } finally {
      stream.close();
    }
  }, 120_000);
});

type LiveMessage = { events: { type: string; authorization_id: string | null; agent_id: string | null }[]; pending_approvals: number | null; available: boolean };

/** The console's live stream read as a browser's fetch does: each `ledger` message parsed, waited for by a predicate. */
async function openStream(origin: string, session: string) {
  const controller = new AbortController();
  const response = await fetch(`${origin}/api/live`, { headers: { 'x-lexec-session': session }, signal: controller.signal });
  expect(response.status).toBe(200);
  expect(response.headers.get('content-type')).toContain('text/event-stream');
  expect(response.headers.get('content-security-policy')).toContain("default-src 'self'");
  const reader = (response.body as ReadableStream<Uint8Array>).pipeThrough(new TextDecoderStream()).getReader();
  let all = '';
  let buffer = '';
  const queue: LiveMessage[] = [];
  return {
    async next(wanted: (message: LiveMessage) => boolean): Promise<LiveMessage> {
      for (;;) {
        const index = queue.findIndex(wanted);
        if (index !== -1) return queue.splice(0, index + 1).at(-1) as LiveMessage;
        queue.length = 0;
        const { value, done } = await reader.read();
        if (done) throw new Error('the live stream ended');
        all += value;
        buffer += value;
        let end: number;
        while ((end = buffer.indexOf('\n\n')) !== -1) {
          const block = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          const data = block.split('\n').find((line) => line.startsWith('data: '));
          if (block.includes('event: ledger') && data !== undefined) queue.push(JSON.parse(data.slice(6)) as LiveMessage);
        }
      }
    },
    text: () => all,
    close: () => {
      controller.abort();
    },
  };
}
