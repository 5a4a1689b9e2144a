import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createExecutorClient } from '../../src/executor/client/executor-client.js';
import { expectFailure, expectResult, type CliRun } from '../support/cli.js';
import { rawRequest, signIn, startConsoleProcess, type ConsoleProcess, type RawResponse } from '../support/console-process.js';
import { startRunningStack, type RunningStack } from '../support/running-stack.js';

/*
 * The console's HTTP surface without a browser: the real `lexec stack console` child against a
 * real sandbox stack, spoken to with raw HTTP so Host, Origin, cookies and the CSRF header are
 * exactly what each test sets. Also the executor's list route the console reads.
 */

let stack: RunningStack;
let consoleProcess: ConsoleProcess;
const bodies: string[] = [];
const runs: CliRun[] = [];

async function send(method: string, path: string, options: { headers?: Record<string, string>; body?: unknown } = {}): Promise<RawResponse> {
  const response = await rawRequest(consoleProcess.origin, method, path, options);
  bodies.push(response.body, JSON.stringify(response.headers));
  return response;
}

const errorOf = (response: RawResponse) => (JSON.parse(response.body) as { error: { code: string; reason_code?: string; fields?: string[] } }).error;

beforeAll(async () => {
  stack = await startRunningStack();
  consoleProcess = await startConsoleProcess(stack);
}, 180_000);

afterAll(async () => {
  const secrets = await Promise.all((['admin', 'agent', 'approver', 'caller', 'reconciliation'] as const).map((role) => stack.capability(role)));
  const code = await consoleProcess.stop();
  const { stdout, stderr } = consoleProcess.output();
  await stack.stop();
  expect(code).toBe(0);
  for (const text of [...bodies, stdout, stderr, ...runs.map((run) => run.stdout + run.stderr)]) {
    expect(text).not.toMatch(/lexec_[a-z]+_[A-Za-z0-9_-]{43}/);
    for (const secret of secrets) expect(text).not.toContain(secret);
  }
  // Neither the login tokens nor a session id reach the console's log.
  expect(stderr).not.toContain(new URL(consoleProcess.loginUrl).hash.slice(1));
}, 60_000);

describe('lexec stack console over plain HTTP', () => {
  it('prints its loopback address and a login link whose token is in the fragment', () => {
    expect(consoleProcess.origin).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(consoleProcess.loginUrl).toMatch(new RegExp(`^${consoleProcess.origin}/login#[A-Za-z0-9_-]{43}$`));
  });

  it('without a session serves nothing but the login page: 401 for the API, a sign-in page for HTML', async () => {
    const api = await send('GET', '/api/overview');
    expect(api.status).toBe(401);
    expect(errorOf(api).code).toBe('unauthorized');
    const page = await send('GET', '/executions');
    expect(page.status).toBe(401);
    expect(page.headers['content-type']).toContain('text/html');
    expect(page.body).toContain('Not signed in');
    expect((await send('GET', '/assets/console.js')).status).toBe(401);
    expect((await send('GET', '/api/executions/exe_0123456789abcdef0123456789abcdef/artifacts/art_00000000-0000-0000-0000-000000000000')).status).toBe(401);
    const login = await send('GET', '/login');
    expect(login.status).toBe(200);
    expect(login.headers['content-security-policy']).toContain("default-src 'self'");
    expect(login.headers['content-security-policy']).toContain("frame-ancestors 'none'");
    expect(login.headers).toMatchObject({ 'x-content-type-options': 'nosniff', 'referrer-policy': 'no-referrer', 'cache-control': 'no-store' });
  });

  it('a login token works once, from the console\'s own origin only; the cookie is HttpOnly, SameSite=Strict, Path=/', async () => {
    const token = new URL(await consoleProcess.newLogin()).hash.slice(1);
    const forged = await send('POST', '/api/login', { headers: { origin: 'http://evil.example' }, body: { token } });
    expect(forged.status).toBe(403);
    expect(errorOf(forged)).toEqual({ code: 'forbidden', reason_code: 'cross_site_request' });
    expect((await send('POST', '/api/login', { headers: { origin: consoleProcess.origin }, body: { token: 'A'.repeat(43) } })).status).toBe(401);

    const login = await send('POST', '/api/login', { headers: { origin: consoleProcess.origin }, body: { token } });
    expect(login.status).toBe(200);
    const cookie = [login.headers['set-cookie'] ?? []].flat()[0] ?? '';
    expect(cookie).toMatch(/^lexec_console_session=[A-Za-z0-9_-]{43}; HttpOnly; SameSite=Strict; Path=\/$/);
    expect(login.body).not.toContain(cookie.split(';')[0]?.split('=')[1] ?? 'none');

    const again = await send('POST', '/api/login', { headers: { origin: consoleProcess.origin }, body: { token } });
    expect(again.status).toBe(401);
    expect(errorOf(again)).toEqual({ code: 'unauthorized', reason_code: 'login_token_invalid' });
    // The session works.
    expect((await send('GET', '/api/overview', { headers: { cookie: cookie.split(';')[0] ?? '' } })).status).toBe(200);
  });

  it('a Host other than its own 127.0.0.1:PORT is refused, session or not (DNS rebinding)', async () => {
    const { cookie } = await signIn(consoleProcess.origin, await consoleProcess.newLogin());
    const port = new URL(consoleProcess.origin).port;
    for (const host of [`evil.example:${port}`, `localhost:${port}`, '127.0.0.1']) {
      const refused = await send('GET', '/api/overview', { headers: { host, cookie } });
      expect(refused.status, host).toBe(421);
      expect(errorOf(refused)).toEqual({ code: 'misdirected_request', reason_code: 'wrong_host' });
    }
  });

  it('a state-changing request needs the own Origin (or Sec-Fetch-Site: same-origin) and the session\'s CSRF token', async () => {
    const { cookie, csrf } = await signIn(consoleProcess.origin, await consoleProcess.newLogin());
    expect(csrf).toMatch(/^[A-Za-z0-9_-]{43}$/);
    const path = '/api/approvals/0b7e6c1a-2f4d-4c8e-9a51-3d2f8e7c6b10/approve';
    const crossSite = await send('POST', path, { headers: { cookie, origin: 'http://127.0.0.1.evil.example', 'x-lexec-csrf': csrf }, body: {} });
    expect(crossSite.status).toBe(403);
    expect(errorOf(crossSite).reason_code).toBe('cross_site_request');
    expect((await send('POST', path, { headers: { cookie, 'sec-fetch-site': 'cross-site', 'x-lexec-csrf': csrf }, body: {} })).status).toBe(403);
    expect((await send('POST', path, { headers: { cookie, 'x-lexec-csrf': csrf }, body: {} })).status).toBe(403);
    const noToken = await send('POST', path, { headers: { cookie, origin: consoleProcess.origin }, body: {} });
    expect(noToken.status).toBe(403);
    expect(errorOf(noToken).reason_code).toBe('csrf_token_invalid');
    expect((await send('POST', path, { headers: { cookie, origin: consoleProcess.origin, 'x-lexec-csrf': 'B'.repeat(43) }, body: {} })).status).toBe(403);
    expect((await send('POST', path, { headers: { origin: consoleProcess.origin, 'x-lexec-csrf': csrf }, body: {} })).status).toBe(401);
    // Past every check, the ledger answers: no such authorization.
    const passed = await send('POST', path, { headers: { cookie, 'sec-fetch-site': 'same-origin', 'x-lexec-csrf': csrf }, body: {} });
    expect(passed.status).toBe(404);
    expect(errorOf(passed)).toEqual({ code: 'not_found', reason_code: 'ledger_not_found' });
  });

  it('bad input is refused with field paths and never echoed', async () => {
    const { cookie, csrf } = await signIn(consoleProcess.origin, await consoleProcess.newLogin());
    const filter = await send('GET', '/api/executions?state=%3Cscript%3Ebogus', { headers: { cookie } });
    expect(filter.status).toBe(400);
    expect(errorOf(filter)).toMatchObject({ code: 'invalid_request', fields: ['state'] });
    expect(filter.body).not.toContain('bogus');
    const resolve = await send('POST', '/api/reconciliations/exe_0123456789abcdef0123456789abcdef/resolve', {
      headers: { cookie, origin: consoleProcess.origin, 'x-lexec-csrf': csrf },
      body: { resolution: 'settle', images_billed: 99, note: 'secret-looking-note' },
    });
    expect(resolve.status).toBe(400);
    expect(errorOf(resolve).fields).toEqual(['images_billed']);
    expect(resolve.body).not.toContain('secret-looking-note');
  });

  it('lists executions newest first with exact amounts, and pages through the executor\'s GET /v1/executions', async () => {
    for (const prompt of ['a lighthouse', 'a harbour']) {
      const run = await stack.lexec(['run', prompt, '--out', `${stack.home}/out-${prompt.replace(' ', '-')}`, '--json'], { timeoutMs: 120_000 });
      runs.push(run);
      expectResult(run);
    }
    const { cookie } = await signIn(consoleProcess.origin, await consoleProcess.newLogin());
    const listed = await send('GET', '/api/executions?state=succeeded', { headers: { cookie } });
    expect(listed.status).toBe(200);
    const page = JSON.parse(listed.body) as { executions: { execution_id: string; state: string; cost: { units: string; display: string } }[] };
    expect(page.executions).toHaveLength(2);
    expect(page.executions[0]).toMatchObject({ state: 'succeeded', cost: { units: '3000', display: '0.003000 USD' } });

    const executor = createExecutorClient({ url: stack.executorUrl, token: await stack.capability('reconciliation') });
    const first = await executor.executions({ limit: 1 });
    expect(first.executions.map((execution) => execution.execution_id)).toEqual([page.executions[0]?.execution_id]);
    expect(first.next_before).toBe(page.executions[0]?.execution_id);
    const second = await executor.executions({ limit: 1, before: first.next_before ?? '' });
    expect(second.executions.map((execution) => execution.execution_id)).toEqual([page.executions[1]?.execution_id]);
    expect((await executor.executions({ state: 'failed' })).executions).toEqual([]);
    const detail = await executor.executionDetail(first.executions[0]?.execution_id ?? '');
    expect(Object.values(detail.timeline).filter((at) => at !== null)).toHaveLength(5);
    expect(detail.timeline.released_at).toBeNull();
    await expect(executor.executions({ limit: 101 })).rejects.toMatchObject({ code: 'executor_invalid_request', issues: [{ path: 'limit' }] });
  }, 180_000);

  it('refuses to start for a profile that does not exist (the running one exits 0 on SIGTERM: afterAll)', async () => {
    const missing = await stack.lexec(['stack', 'console', '--profile', 'nowhere', '--json']);
    runs.push(missing);
    expectFailure(missing, 1, 'profile_not_found');
  });
});
