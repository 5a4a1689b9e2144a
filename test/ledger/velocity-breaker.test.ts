import { join } from 'node:path';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { composeLedger } from '../../src/ledger/compose-ledger.js';
import { call, DEFAULT_POLICY, TEST_ADMIN, type Actors, type TestLedger, ledgerPerTest } from '../support/ledger.js';

/*
 * Issue 27 item 3 at the ledger: the runaway-loop breaker. A policy's `max_requests_per_minute` /
 * `max_requests_per_hour` refuse an agent's spend requests over them with 429 `velocity_exceeded`
 * and `Retry-After` (every request counts, refused ones too); `suspend_after_velocity_refusals`
 * suspends the agent at the Nth velocity refusal in the rolling hour, as an operator's suspension
 * does, recorded as the breaker's. Bad limits are refused with their field paths; a policy
 * without them behaves as before. The real ledger app on a real SQLite file, its clock moved by
 * the test (so windows pass without waiting); the race is in velocity-process.test.ts.
 */

interface ErrorBody {
  error?: { code: string; reason_code?: string; fields?: string[]; retry_after_seconds?: number; velocity_limit?: string; suspended_by?: string };
  authorization?: { token_id: string; status: string };
}

let ledger: TestLedger;
let actors: Actors;

ledgerPerTest((started, its) => {
  ledger = started;
  actors = its;
});

const CAPS = { per_authorization_cap_units: '5000000', daily_cap_units: '20000000', approval_threshold_units: '1000000', units_scale: 6, currency: 'USD' };

async function setPolicy(body: Record<string, unknown>, agentId = actors.agentId) {
  return call<{ policy: Record<string, unknown> } & ErrorBody>(ledger.url, 'PUT', `/agents/${agentId}/policy`, { token: ledger.adminToken, body: { ...CAPS, ...body } });
}

/** One spend request, with the Retry-After header it was answered with (null: none). */
async function request(amountUnits = '1000') {
  const response = await fetch(`${ledger.url}/authorizations`, {
    method: 'POST',
    headers: { authorization: `Bearer ${actors.agent}`, 'content-type': 'application/json' },
    body: JSON.stringify({ amount_units: amountUnits, units_scale: 6, currency: 'USD', purpose: 'a loop' }),
  });
  return { status: response.status, retryAfter: response.headers.get('retry-after'), body: (await response.json()) as ErrorBody };
}

/** A 429 `velocity_exceeded` whose header and body agree; its Retry-After in seconds. */
function velocityRefusal(answer: Awaited<ReturnType<typeof request>>, limit: string): number {
  expect(answer.status).toBe(429);
  expect(answer.body.error).toMatchObject({ code: 'too_many_requests', reason_code: 'velocity_exceeded', velocity_limit: limit });
  expect(answer.retryAfter).toMatch(/^\d+$/);
  expect(answer.body.error?.retry_after_seconds).toBe(Number(answer.retryAfter));
  return Number(answer.retryAfter);
}

const agentRow = () =>
  ledger.query<{ status: string; suspended_by: string | null; suspension_reason: string | null }>('SELECT status, suspended_by, suspension_reason FROM agents WHERE agent_id = ?', actors.agentId)[0];
const policyRow = () => ledger.query('SELECT * FROM policies WHERE agent_id = ?', actors.agentId)[0];
const logged = () => Number(ledger.query<{ n: bigint }>('SELECT COUNT(*) AS n FROM agent_requests WHERE agent_id = ?', actors.agentId)[0]?.n);
const spending = async () => (await call<{ spending: { held_units: string; agent_status: string } }>(ledger.url, 'GET', '/agent/spending', { token: actors.agent })).body.spending;

describe('velocity limits', () => {
  it('cuts requests at the per-minute limit with an honest Retry-After; refused requests count, so waiting (not retrying) is what helps', async () => {
    expect((await setPolicy({ max_requests_per_minute: 3 })).status).toBe(200);
    for (let index = 0; index < 3; index += 1) expect((await request()).status).toBe(201);
    const first = velocityRefusal(await request(), 'max_requests_per_minute');
    expect(first).toBeGreaterThanOrEqual(1);
    expect(first).toBeLessThanOrEqual(60);

    // Half a minute later the first requests are still inside the window: refused again, and this
    // refusal counts too, so the wait is now measured from a later request.
    ledger.advance(30_000);
    const second = velocityRefusal(await request(), 'max_requests_per_minute');
    expect(second).toBeLessThanOrEqual(31);
    // Waiting as told is enough: the next request is within the limit.
    ledger.advance(second * 1000);
    expect((await request()).status).toBe(201);
    expect(logged()).toBe(6);
  });

  it('the per-hour limit has an hour-long window; a request refused by a cap counts as well', async () => {
    expect((await setPolicy({ max_requests_per_hour: 2 })).status).toBe(200);
    // Above the per-authorization cap: refused 422 as ever, but counted.
    expect((await request('6000000')).body.error).toEqual({ code: 'policy_refused', reason_code: 'per_authorization_cap_exceeded', fields: ['amount_units'] });
    expect((await request()).status).toBe(201);
    const wait = velocityRefusal(await request(), 'max_requests_per_hour');
    expect(wait).toBeGreaterThan(3000);
    expect(wait).toBeLessThanOrEqual(3600);
    // Ten minutes before the wait is over it is still refused (a margin no slow machine eats up).
    ledger.advance((wait - 600) * 1000);
    velocityRefusal(await request(), 'max_requests_per_hour');
  });

  it('suspends the agent at the Nth velocity refusal in the hour, as an operator would: holds freed, marked as the breaker\'s, and why', async () => {
    expect((await setPolicy({ max_requests_per_minute: 2, suspend_after_velocity_refusals: 3 })).status).toBe(200);
    const held = [await request('400000'), await request('2000000')];
    expect(held.map((answer) => answer.body.authorization?.status)).toEqual(['approved', 'requested']);
    expect((await spending()).held_units).toBe('2400000');
    velocityRefusal(await request(), 'max_requests_per_minute');
    velocityRefusal(await request(), 'max_requests_per_minute');

    // The third velocity refusal: waiting would not help any more, so it says suspended.
    const tripped = await request();
    expect(tripped).toMatchObject({ status: 403, retryAfter: null, body: { error: { code: 'forbidden', reason_code: 'agent_suspended', suspended_by: 'velocity_breaker' } } });
    expect(agentRow()).toEqual({
      status: 'suspended',
      suspended_by: 'velocity_breaker',
      suspension_reason: 'velocity: 3 refusals in the last hour (limit 2 requests per minute); suspended automatically by the runaway-loop breaker',
    });
    const statuses = ledger.query<{ status: string; cancellation_reason: string | null }>('SELECT status, cancellation_reason FROM authorizations WHERE agent_id = ?', actors.agentId);
    expect(statuses).toEqual([
      { status: 'cancelled', cancellation_reason: 'agent_suspended' },
      { status: 'cancelled', cancellation_reason: 'agent_suspended' },
    ]);
    expect(await spending()).toMatchObject({ held_units: '0', agent_status: 'suspended' });
    // Later requests are refused as for any suspension, still saying whose it was; nothing more is counted.
    expect(await request()).toMatchObject({ status: 403, body: { error: { reason_code: 'agent_suspended', suspended_by: 'velocity_breaker' } } });
    expect(logged()).toBe(5);
    const listed = await call<{ agents: { agent_id: string; status: string; suspended_by: string | null }[] }>(ledger.url, 'GET', '/agents', { token: ledger.adminToken });
    expect(listed.body.agents.find((agent) => agent.agent_id === actors.agentId)).toMatchObject({ status: 'suspended', suspended_by: 'velocity_breaker' });

    // Resumed, the breaker counts afresh: the requests still count against the limit (refused),
    // but one refusal does not suspend it again.
    expect((await call(ledger.url, 'POST', `/agents/${actors.agentId}/resume`, { token: ledger.adminToken, body: {} })).status).toBe(200);
    velocityRefusal(await request(), 'max_requests_per_minute');
    expect(agentRow()).toMatchObject({ status: 'active', suspended_by: null });
  });

  it('counts only the refusals of the rolling hour towards the breaker', async () => {
    expect((await setPolicy({ max_requests_per_minute: 1, suspend_after_velocity_refusals: 2 })).status).toBe(200);
    expect((await request()).status).toBe(201);
    velocityRefusal(await request(), 'max_requests_per_minute');
    ledger.advance(61 * 60_000);
    expect((await request()).status).toBe(201);
    // The first refusal left the hour: this is the only one in it.
    velocityRefusal(await request(), 'max_requests_per_minute');
    expect(agentRow()?.status).toBe('active');
    // Requests older than an hour are forgotten.
    expect(logged()).toBe(2);
  });

  it('an operator suspension is marked as the operator\'s', async () => {
    expect((await call(ledger.url, 'POST', `/agents/${actors.agentId}/suspend`, { token: ledger.adminToken, body: { reason: 'by hand' } })).status).toBe(200);
    expect(await request()).toEqual({ status: 403, retryAfter: null, body: { error: { code: 'forbidden', reason_code: 'agent_suspended' } } });
    expect(agentRow()).toMatchObject({ suspended_by: 'operator', suspension_reason: 'by hand' });
  });
});

describe('policies with and without velocity limits', () => {
  it('a policy without them behaves as before: nothing counted, views say null', async () => {
    const shown = await call<{ policy: Record<string, unknown> }>(ledger.url, 'GET', `/agents/${actors.agentId}/policy`, { token: ledger.adminToken });
    expect(shown.body.policy).toMatchObject({ max_requests_per_minute: null, max_requests_per_hour: null, suspend_after_velocity_refusals: null });
    for (let index = 0; index < 12; index += 1) expect((await request()).status).toBe(201);
    expect((await request('6000000')).status).toBe(422);
    expect(logged()).toBe(0);
  });

  it('PUT keeps a velocity field it leaves out and removes one set to null; shows them as decimal strings', async () => {
    const set = await setPolicy({ max_requests_per_minute: '30', max_requests_per_hour: 500, suspend_after_velocity_refusals: 5 });
    expect(set.body.policy).toMatchObject({ max_requests_per_minute: '30', max_requests_per_hour: '500', suspend_after_velocity_refusals: '5', version: '2' });
    // A client that knows only the caps (an older CLI, the console's form) does not drop the breaker.
    const capsOnly = await setPolicy({ daily_cap_units: '30000000' });
    expect(capsOnly.body.policy).toMatchObject({ daily_cap_units: '30000000', max_requests_per_minute: '30', max_requests_per_hour: '500', suspend_after_velocity_refusals: '5', version: '3' });
    const cleared = await setPolicy({ max_requests_per_hour: null, suspend_after_velocity_refusals: null });
    expect(cleared.body.policy).toMatchObject({ max_requests_per_minute: '30', max_requests_per_hour: null, suspend_after_velocity_refusals: null, version: '4' });
  });

  it('refuses a negative, fractional, zero, non-numeric or too large limit, and a breaker without a limit, with field paths; nothing changes', async () => {
    expect((await setPolicy({ max_requests_per_minute: 10, suspend_after_velocity_refusals: 3 })).status).toBe(200);
    const before = policyRow();
    const cases: [Record<string, unknown>, string[]][] = [
      [{ max_requests_per_minute: -1 }, ['max_requests_per_minute']],
      [{ max_requests_per_hour: 1.5 }, ['max_requests_per_hour']],
      [{ max_requests_per_minute: 0 }, ['max_requests_per_minute']],
      [{ max_requests_per_hour: 'many' }, ['max_requests_per_hour']],
      [{ max_requests_per_minute: '1e3' }, ['max_requests_per_minute']],
      [{ max_requests_per_minute: 100_001 }, ['max_requests_per_minute']],
      [{ suspend_after_velocity_refusals: -3, max_requests_per_hour: 2.5 }, ['max_requests_per_hour', 'suspend_after_velocity_refusals']],
      [{ max_requests_per_minute: null, max_requests_per_hour: null, suspend_after_velocity_refusals: 3 }, ['suspend_after_velocity_refusals']],
      // Left out, the breaker would be kept with both limits removed: refused after the merge.
      [{ max_requests_per_minute: null }, ['suspend_after_velocity_refusals']],
    ];
    for (const [body, fields] of cases) {
      const answer = await setPolicy(body);
      expect(answer, JSON.stringify(body)).toMatchObject({ status: 400, body: { error: { code: 'invalid_request', fields } } });
      // Never the submitted value.
      expect(JSON.stringify(answer.body)).not.toMatch(/many|1e3|100001|2\.5|-3|-1/);
    }
    expect(policyRow()).toEqual(before);
  });
});

describe('velocity limits in the configured default policy', () => {
  it('apply to the agents that follow the default, at every start; an agent given its own policy keeps it', async () => {
    const config = (policy: typeof DEFAULT_POLICY & Record<string, bigint>) => ({
      database_path: join(ledger.dir, 'default.db'),
      admin_capability_path: join(ledger.dir, 'default-credentials', 'admin.capability'),
      contract_level: 'v4.5' as const,
      authorization_ttl_seconds: 3600,
      default_policy: policy,
    });
    const start = (policy: typeof DEFAULT_POLICY & Record<string, bigint>) => composeLedger({ config: config(policy), logger: pino({ level: 'silent' }) });
    const first = await start({ ...DEFAULT_POLICY, max_requests_per_hour: 100n, suspend_after_velocity_refusals: 10n });
    const follower = first.admin.addAgent('follower', TEST_ADMIN);
    const own = first.admin.addAgent('own', TEST_ADMIN);
    expect(first.admin.policy(follower.agent_id)).toMatchObject({ max_requests_per_minute: null, max_requests_per_hour: 100n, suspend_after_velocity_refusals: 10n, source: 'default' });
    // Left out, the hour's limit and the breaker are kept from the policy it had.
    first.admin.setPolicy(own.agent_id, { ...DEFAULT_POLICY, max_requests_per_minute: 5n }, TEST_ADMIN);
    first.close();

    // The default loses its breaker and gains a per-minute limit: a change, with a new version.
    const second = await start({ ...DEFAULT_POLICY, max_requests_per_minute: 20n });
    try {
      expect(second.defaultPolicyAppliedTo).toBe(1);
      expect(second.admin.policy(follower.agent_id)).toMatchObject({ max_requests_per_minute: 20n, max_requests_per_hour: null, suspend_after_velocity_refusals: null, version: 2n });
      expect(second.admin.policy(own.agent_id)).toMatchObject({ max_requests_per_minute: 5n, max_requests_per_hour: 100n, suspend_after_velocity_refusals: 10n, source: 'operator' });
    } finally {
      second.close();
    }
  });
});
