import { randomUUID } from 'node:crypto';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, claimBody, mintCredential, preciseReceipt, setUpActors, startTestLedger, type Actors, type TestLedger } from '../support/ledger.js';
import { parseScrape, samples, scrape, typeOf } from '../support/prometheus.js';

/*
 * `GET /metrics` on a real ledger (its composition root, a real SQLite file, a loopback port)
 * after a history of requests, approvals, claims, settlements, an expiry and a reconciliation
 * record: every figure, read by an independent Prometheus text parser, is exactly the sum of the
 * rows it stands for; nothing secret, no prompt, no URL, no id is in it; and only a loopback
 * caller with a metrics capability is answered.
 */

const TARGET_A = 'lexec:target:v1:flux-schnell';
const TARGET_B = 'lexec:target:v1:flux-dev';
const PROMPT = 'a lighthouse at dusk, oil on canvas';
const HOUR_MS = 3_600_000;

let ledger: TestLedger;
let alpha: Actors;
let beta: Actors;
let metrics: string;
const ids: string[] = [];

async function request(agent: string, amountUnits: bigint, targetId?: string): Promise<{ token_id: string; status: string }> {
  const body = { amount_units: String(amountUnits), units_scale: 6, currency: 'USD', prompt: PROMPT, ...(targetId === undefined ? {} : { target_id: targetId }) };
  const answer = await call<{ authorization: { token_id: string; status: string } }>(ledger.url, 'POST', '/authorizations', { token: agent, body });
  expect(answer.status).toBe(201);
  ids.push(answer.body.authorization.token_id);
  return answer.body.authorization;
}

async function claim(actors: Actors, tokenId: string): Promise<string> {
  const executionId = `exe_${randomUUID().replaceAll('-', '')}`;
  ids.push(executionId);
  const claimed = await call(ledger.url, 'POST', `/executor/authorizations/${tokenId}/claim`, { token: actors.executor, body: claimBody(ledger, tokenId, executionId) });
  expect(claimed.status).toBe(200);
  return executionId;
}

async function settle(actors: Actors, tokenId: string, units: bigint): Promise<void> {
  const executionId = await claim(actors, tokenId);
  const settled = await call(ledger.url, 'POST', `/executor/authorizations/${tokenId}/settle`, { token: actors.executor, body: { execution_id: executionId, receipt: preciseReceipt(units) } });
  expect(settled.status).toBe(200);
}

beforeAll(async () => {
  ledger = await startTestLedger();
  alpha = await setUpActors(ledger, 'alpha');
  beta = await setUpActors(ledger, 'beta');
  metrics = await mintCredential(ledger, 'metrics');
  // Expires before anything else is asked: counted as expired, held by nobody.
  await request(alpha.agent, 100_000n, TARGET_A);
  ledger.advance(HOUR_MS + 1000);

  await settle(alpha, (await request(alpha.agent, 900_000n, TARGET_A)).token_id, 3_000n);
  await settle(alpha, (await request(alpha.agent, 700_000n, TARGET_A)).token_id, 650_000n);
  await request(alpha.agent, 500_000n, TARGET_B); // approved, held
  const parked = await request(beta.agent, 400_000n); // no target: `none`
  const executionId = await claim(beta, parked.token_id);
  const opened = await call(ledger.url, 'POST', `/executor/authorizations/${parked.token_id}/reconciliation`, {
    token: beta.executor,
    body: { execution_id: executionId, reason: 'billing_ambiguous', evidence: { attempt: 1 } },
  });
  expect(opened.status).toBe(201);
  expect((await request(beta.agent, 2_000_000n)).status).toBe('requested'); // above the approval threshold: waits, held
  await settle(beta, (await request(beta.agent, 300_000n, TARGET_B)).token_id, 250_000n);
});

afterAll(async () => {
  await ledger.close();
});

describe('the ledger /metrics', () => {
  it('reports every figure exactly as the sum of its rows, read by an independent parser', async () => {
    const answer = await scrape(ledger.url, metrics);
    expect(answer.status).toBe(200);
    expect(answer.contentType).toMatch(/^text\/plain; version=0\.0\.4/);
    const families = parseScrape(answer.body);

    // The settlement rows themselves, summed as bigints by agent and target.
    const rows = ledger.query<{ agent: string; target: string | null; amount_units: bigint }>(
      'SELECT g.name AS agent, a.target_id AS target, s.amount_units FROM settlements s JOIN authorizations a USING (token_id) JOIN agents g ON g.agent_id = a.agent_id',
    );
    const settledByLabel = new Map<string, bigint>();
    for (const row of rows) {
      const key = `agent=${row.agent},target=${row.target ?? 'none'}`;
      settledByLabel.set(key, (settledByLabel.get(key) ?? 0n) + row.amount_units);
    }
    expect(Object.fromEntries([...settledByLabel].map(([key, units]) => [key, units]))).toEqual({
      [`agent=alpha,target=${TARGET_A}`]: 653_000n,
      [`agent=beta,target=${TARGET_B}`]: 250_000n,
    });
    expect(typeOf(families, 'lexec_ledger_settled_units_total')).toBe('COUNTER');
    expect(samples(families, 'lexec_ledger_settled_units_total')).toEqual(Object.fromEntries([...settledByLabel].map(([key, units]) => [key, Number(units)])));

    expect(typeOf(families, 'lexec_ledger_held_units')).toBe('GAUGE');
    expect(samples(families, 'lexec_ledger_held_units')).toEqual({
      [`agent=alpha,target=${TARGET_B}`]: 500_000,
      'agent=beta,target=none': 400_000 + 2_000_000,
    });
    expect(samples(families, 'lexec_ledger_authorizations')).toEqual({ 'status=approved': 1, 'status=claimed': 1, 'status=expired': 1, 'status=requested': 1, 'status=settled': 3 });
    expect(samples(families, 'lexec_ledger_open_reconciliations')).toEqual({ '': 1 });
    expect(samples(families, 'lexec_ledger_ready')).toEqual({ '': 1 });
    // The webhook seam answers zeros until webhook sinks exist.
    expect(samples(families, 'lexec_ledger_webhook_deliveries_total')).toEqual({ '': 0 });
    expect(samples(families, 'lexec_ledger_webhook_delivery_failures_total')).toEqual({ '': 0 });
  });

  it("reports each agent's rolling 24 h budget remaining as GET /agents/{id}/spending answers it", async () => {
    const families = parseScrape((await scrape(ledger.url, metrics)).body);
    const remaining = async (actors: Actors) =>
      (await call<{ spending: { remaining_units: string } }>(ledger.url, 'GET', `/agents/${actors.agentId}/spending`, { token: ledger.adminToken })).body.spending.remaining_units;
    expect(samples(families, 'lexec_ledger_budget_remaining_units')).toEqual({
      'agent=alpha,budget=rolling_24h,period=rolling_24h': Number(await remaining(alpha)),
      'agent=beta,budget=rolling_24h,period=rolling_24h': Number(await remaining(beta)),
    });
    // 20 USD a day less what was settled and what is held in the window.
    expect(await remaining(alpha)).toBe(String(20_000_000n - 653_000n - 500_000n));
    expect(await remaining(beta)).toBe(String(20_000_000n - 250_000n - 2_400_000n));
  });

  it('a scrape takes no write lock: it is answered while another connection holds one (a scrape never holds up a spend request)', async () => {
    // Used once just before: the credential's last use is fresh, so the scrape writes nothing either.
    const before = await scrape(ledger.url, metrics);
    expect(before.status).toBe(200);
    const writer = new Database(ledger.databasePath);
    writer.pragma('busy_timeout = 0');
    writer.exec('BEGIN IMMEDIATE');
    try {
      // The ledger's busy timeout is 5 s: a scrape that waited for the lock would not be answered within this one.
      const during = await scrape(ledger.url, metrics, AbortSignal.timeout(3_000));
      expect(during.status).toBe(200);
      expect(samples(parseScrape(during.body), 'lexec_ledger_budget_remaining_units')).toEqual(samples(parseScrape(before.body), 'lexec_ledger_budget_remaining_units'));
    } finally {
      writer.exec('ROLLBACK');
      writer.close();
    }
  });

  it('carries no capability, no prompt, no URL and no authorization or execution id', async () => {
    const { body } = await scrape(ledger.url, metrics);
    const secrets = [ledger.adminToken, metrics, ...[alpha, beta].flatMap((actors) => [actors.agent, actors.approver, actors.executor, actors.reconciliation])];
    for (const secret of secrets) expect(body).not.toContain(secret);
    expect(body).not.toContain('lexec_metrics_');
    expect(body).not.toContain('lighthouse');
    expect(body).not.toMatch(/https?:\/\//);
    for (const id of ids) expect(body).not.toContain(id);
    expect(body).not.toContain(alpha.agentId);
  });

  it('answers 401 without a capability and to every other kind; a metrics capability reads nothing else', async () => {
    expect((await scrape(ledger.url)).status).toBe(401);
    for (const other of [ledger.adminToken, alpha.agent, alpha.approver, alpha.executor, alpha.reconciliation]) {
      const refused = await scrape(ledger.url, other);
      expect(refused).toMatchObject({ status: 401 });
      expect(JSON.parse(refused.body)).toEqual({ error: { code: 'unauthorized' } });
    }
    for (const [method, path] of [
      ['GET', '/agents'],
      ['GET', '/authorizations'],
      ['GET', '/approvals'],
      ['GET', '/audit'],
      ['GET', '/reconciliation-records'],
      ['GET', '/agent/spending'],
      ['GET', `/agents/${alpha.agentId}/spending`],
      ['GET', `/executor/authorizations/${ids[1] ?? ''}`],
      ['POST', '/authorizations'],
    ] as const) {
      expect((await call(ledger.url, method, path, { token: metrics, ...(method === 'POST' ? { body: {} } : {}) })).status, `${method} ${path}`).toBe(401);
    }
    // Every kind may ask which credential it is (how a holder finds its id to rotate it).
    const self = await call<{ credential: { kind: string } }>(ledger.url, 'GET', '/credentials/self', { token: metrics });
    expect(self).toMatchObject({ status: 200, body: { credential: { kind: 'metrics' } } });
  });

  it('refuses a scrape from a remote address that is not loopback, with or without a capability (403 metrics_loopback_only)', async () => {
    for (const remoteAddress of ['192.0.2.10', '::ffff:192.0.2.10', '2001:db8::1']) {
      const refused = await ledger.app.inject({ method: 'GET', url: '/metrics', remoteAddress, headers: { authorization: `Bearer ${metrics}` } });
      expect(refused.statusCode).toBe(403);
      expect(refused.json()).toEqual({ error: { code: 'forbidden', reason_code: 'metrics_loopback_only' } });
    }
    for (const remoteAddress of ['127.0.0.1', '127.8.9.10', '::1', '::ffff:127.0.0.1']) {
      const answered = await ledger.app.inject({ method: 'GET', url: '/metrics', remoteAddress, headers: { authorization: `Bearer ${metrics}` } });
      expect(answered.statusCode, remoteAddress).toBe(200);
    }
  });

  it('does not log a successful scrape (a routine request, as /health), and logs no capability', async () => {
    await scrape(ledger.url, metrics);
    await scrape(ledger.url, metrics);
    const lines = ledger.logs();
    expect(lines.filter((line) => line.route === '/metrics' && line.status === 200)).toEqual([]);
    // The refusals of the test above were logged by route and status only.
    expect(lines.filter((line) => line.route === '/metrics' && line.status === 401).length).toBeGreaterThan(0);
    expect(JSON.stringify(lines)).not.toContain(metrics);
    expect(JSON.stringify(lines)).not.toContain(alpha.agent);
  });
});
