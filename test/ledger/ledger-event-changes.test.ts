import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { EXECUTOR_MIGRATIONS } from '../../src/executor/store/migrations/executor-migrations.js';
import { createLedgerService } from '../../src/ledger/ledger-service.js';
import { openDatabase } from '../../src/storage/open-database.js';
import type { LedgerEvent, LedgerEventPage } from '../../src/ledger/wire/answers.js';
import { checkInvariants } from '../proof/check-invariants.js';
import { call, claimBody, DEFAULT_POLICY, ledgerPerTest, preciseReceipt, setUpActors, startTestLedger, type Actors, type TestLedger } from '../support/ledger.js';

/*
 * Issue 28 item 2 at the ledger: every change it records appends its event in the change's own
 * transaction — approved, denied, expired (read lazily, or by the periodic sweep when nobody
 * reads), cancelled by a suspension, refused (policy caps, velocity, a suspended agent), settled,
 * released, reconciliation opened and resolved, agent suspended and resumed — and an idempotent
 * repeat appends nothing. The independent checker's outbox rules (test/proof/checker/rules-events.ts)
 * hold after each. `GET /events?wait_seconds=` answers as soon as an event follows the cursor —
 * one this ledger wrote, or one another connection to its file wrote — empty at its deadline, and
 * at once when the ledger stops. A real ledger app on a real SQLite file.
 */

type EventsAnswer = LedgerEventPage & { error?: { code: string; fields?: string[] } };
const OUTBOX_RULES = new Set(['change_has_one_event', 'event_has_change']);

let ledger: TestLedger;
let actors: Actors;

ledgerPerTest((started, its) => {
  ledger = started;
  actors = its;
});

const TARGET = 'lexec:target:v1:flux-schnell';

async function request(amountUnits: string, token = actors.agent) {
  return call<{ authorization: { token_id: string; status: string }; error?: { reason_code: string } }>(ledger.url, 'POST', '/authorizations', {
    token,
    body: { amount_units: amountUnits, units_scale: 6, currency: 'USD', purpose: 'a poster', target_id: TARGET, prompt: 'a lighthouse at dusk' },
  });
}
async function requested(amountUnits: string): Promise<string> {
  const answer = await request(amountUnits);
  expect(answer.status).toBe(201);
  return answer.body.authorization.token_id;
}
const executor = (path: string, body: unknown) => call(ledger.url, 'POST', `/executor/authorizations/${path}`, { token: actors.executor, body });

async function allEvents(query = ''): Promise<LedgerEvent[]> {
  const page = await call<EventsAnswer>(ledger.url, 'GET', `/events?limit=500${query}`, { token: ledger.adminToken });
  expect(page.status).toBe(200);
  return page.body.events;
}
const typesOf = async (tokenId: string) => (await allEvents()).filter((event) => event.authorization_id === tokenId).map((event) => event.type);
const only = async (type: string) => (await allEvents(`&types=${type}`)).map(({ type: t, authorization_id, amount_units, target_id, details }) => ({ type: t, authorization_id, amount_units, target_id, details }));

/** The independent checker's outbox rules over this ledger's file (an empty executor beside it). */
function outboxViolations() {
  const executorDatabase = join(ledger.dir, 'executor.db');
  openDatabase(executorDatabase, EXECUTOR_MIGRATIONS).close();
  const report = checkInvariants({ ledgerDatabase: ledger.databasePath, executorDatabase, submissionsLog: null, sandboxJobsFile: null, artifactRoot: join(ledger.dir, 'artifacts') });
  return report.violations.filter((violation) => OUTBOX_RULES.has(violation.rule));
}

describe('each change appends its event, once', () => {
  it('settled: the amount settled, the hold in details; a replayed settle appends nothing', async () => {
    const tokenId = await requested('900000');
    await executor(`${tokenId}/claim`, claimBody(ledger, tokenId, 'exe_1'));
    const receipt = preciseReceipt(3000n, 'rcpt_one');
    expect((await executor(`${tokenId}/settle`, { execution_id: 'exe_1', receipt })).status).toBe(200);
    expect((await executor(`${tokenId}/settle`, { execution_id: 'exe_1', receipt })).status).toBe(200);
    expect(await typesOf(tokenId)).toEqual(['authorization.requested', 'authorization.settled']);
    expect(await only('authorization.settled')).toEqual([
      { type: 'authorization.settled', authorization_id: tokenId, amount_units: '3000', target_id: TARGET, details: { held_units: '900000' } },
    ]);
    expect(outboxViolations()).toEqual([]);
  });

  it('released: its reason; a repeat appends nothing', async () => {
    const tokenId = await requested('900000');
    await executor(`${tokenId}/claim`, claimBody(ledger, tokenId, 'exe_1'));
    for (let i = 0; i < 2; i += 1) expect((await executor(`${tokenId}/release`, { execution_id: 'exe_1', reason: 'not_transmitted' })).status).toBe(200);
    expect(await only('authorization.released')).toEqual([
      { type: 'authorization.released', authorization_id: tokenId, amount_units: '900000', target_id: TARGET, details: { reason: 'not_transmitted' } },
    ]);
    expect(outboxViolations()).toEqual([]);
  });

  it('approved and denied by an approver: its kind and whether named, never its free-text reason; a repeat appends nothing', async () => {
    const approved = await requested('2000000');
    const denied = await requested('3000000');
    for (let i = 0; i < 2; i += 1) {
      expect((await call(ledger.url, 'POST', `/authorizations/${approved}/approve`, { token: actors.approver, body: { reason: 'looks fine to Ada' } })).status).toBe(200);
      expect((await call(ledger.url, 'POST', `/authorizations/${denied}/deny`, { token: actors.approver, body: { reason: 'too dear for Ada' } })).status).toBe(200);
    }
    expect([...(await only('authorization.approved')), ...(await only('authorization.denied'))]).toEqual([
      { type: 'authorization.approved', authorization_id: approved, amount_units: '2000000', target_id: TARGET, details: { decided_by: 'approver', named_approver: false } },
      { type: 'authorization.denied', authorization_id: denied, amount_units: '3000000', target_id: TARGET, details: { decided_by: 'approver', named_approver: false } },
    ]);
    expect(JSON.stringify(await allEvents())).not.toMatch(/Ada|lighthouse/);
    expect(outboxViolations()).toEqual([]);
  });

  it('reconciliation opened (its reason, not the evidence) and resolved by a human, or by the executor\'s own settle', async () => {
    const byHuman = await requested('900000');
    const byExecutor = await requested('800000');
    for (const [tokenId, execution] of [[byHuman, 'exe_h'], [byExecutor, 'exe_e']] as const) {
      await executor(`${tokenId}/claim`, claimBody(ledger, tokenId, execution));
      for (let i = 0; i < 2; i += 1) {
        expect((await executor(`${tokenId}/reconciliation`, { execution_id: execution, reason: 'billing_ambiguous', evidence: { note: 'secret-ish evidence' } })).status).toBeLessThan(300);
      }
    }
    const records = await call<{ records: { record_id: string; token_id: string }[] }>(ledger.url, 'GET', '/reconciliation-records', { token: actors.reconciliation });
    const record = records.body.records.find((one) => one.token_id === byHuman)?.record_id ?? '';
    expect((await call(ledger.url, 'POST', `/reconciliation-records/${record}/resolve`, { token: actors.reconciliation, body: { resolution: 'release', reason: 'provider says no charge' } })).status).toBe(200);
    expect((await executor(`${byExecutor}/settle`, { execution_id: 'exe_e', receipt: preciseReceipt(3000n) })).status).toBe(200);

    expect(await typesOf(byHuman)).toEqual(['authorization.requested', 'reconciliation.opened', 'authorization.released', 'reconciliation.resolved']);
    expect(await typesOf(byExecutor)).toEqual(['authorization.requested', 'reconciliation.opened', 'authorization.settled', 'reconciliation.resolved']);
    const resolved = await only('reconciliation.resolved');
    expect(resolved.map((event) => event.details)).toEqual([
      { record_id: record, resolution: 'released', resolved_by: 'operator' },
      { record_id: expect.stringMatching(/^rec_/) as unknown, resolution: 'settled', resolved_by: 'executor' },
    ]);
    expect((await only('reconciliation.opened'))[0]?.details).toEqual({ record_id: record, reason: 'billing_ambiguous' });
    expect(JSON.stringify(await allEvents())).not.toMatch(/evidence|no charge/);
    expect(outboxViolations()).toEqual([]);
  });

  it('a suspension: agent.suspended by the operator, each unclaimed authorization cancelled; the suspended agent\'s request refused and recorded; resumed', async () => {
    const approved = await requested('500000');
    const waiting = await requested('2000000');
    const claimed = await requested('400000');
    await executor(`${claimed}/claim`, claimBody(ledger, claimed, 'exe_1'));
    for (let i = 0; i < 2; i += 1) expect((await call(ledger.url, 'POST', `/agents/${actors.agentId}/suspend`, { token: ledger.adminToken, body: { reason: 'Bob says stop' } })).status).toBe(200);
    const refused = await request('1000');
    expect([refused.status, refused.body.error?.reason_code]).toEqual([403, 'agent_suspended']);
    expect((await call(ledger.url, 'POST', `/agents/${actors.agentId}/resume`, { token: ledger.adminToken })).status).toBe(200);

    const agentEvents = (await allEvents(`&agent_id=${actors.agentId}`)).filter((event) => !['authorization.requested', 'approval.waiting'].includes(event.type));
    expect(agentEvents.map(({ type, authorization_id, details }) => ({ type, authorization_id, details }))).toEqual([
      { type: 'agent.suspended', authorization_id: null, details: { by: 'operator', cancelled_authorizations: 2 } },
      { type: 'authorization.cancelled', authorization_id: approved, details: { reason: 'agent_suspended', status_before: 'approved' } },
      { type: 'authorization.cancelled', authorization_id: waiting, details: { reason: 'agent_suspended', status_before: 'requested' } },
      { type: 'authorization.refused', authorization_id: null, details: { reason: 'agent_suspended' } },
      { type: 'agent.resumed', authorization_id: null, details: { by: 'operator', suspended_by: 'operator' } },
    ]);
    expect(agentEvents[3]).toMatchObject({ amount_units: '1000', target_id: TARGET, agent_name: 'bot' });
    expect(JSON.stringify(agentEvents)).not.toContain('Bob');
    expect(outboxViolations()).toEqual([]);
  });

  it('refused by the policy (the cap named) and by velocity (the limit named); the breaker\'s suspension recorded as its own', async () => {
    const caps = { per_authorization_cap_units: '5000000', daily_cap_units: '6000000', approval_threshold_units: '1000000', units_scale: 6, currency: 'USD' };
    await call(ledger.url, 'PUT', `/agents/${actors.agentId}/policy`, { token: ledger.adminToken, body: { ...caps, max_requests_per_minute: 4, suspend_after_velocity_refusals: 2 } });
    expect((await request('5000001')).status).toBe(422);
    await requested('4000000');
    expect((await request('3000000')).status).toBe(422);
    await requested('1000');
    expect((await request('1000')).status).toBe(429);
    expect((await request('1000')).status).toBe(403);
    const refusals = (await only('authorization.refused')).map((event) => [event.amount_units, event.details]);
    expect(refusals).toEqual([
      ['5000001', { reason: 'per_authorization_cap_exceeded', limit: 'per_authorization_cap_units' }],
      ['3000000', { reason: 'daily_cap_exceeded', limit: 'daily_cap_units' }],
      ['1000', { reason: 'velocity_exceeded', limit: 'max_requests_per_minute' }],
      ['1000', { reason: 'agent_suspended' }],
    ]);
    expect((await only('agent.suspended')).map((event) => event.details)).toEqual([{ by: 'velocity_breaker', cancelled_authorizations: 2 }]);
    expect(outboxViolations()).toEqual([]);
  });

  it('a runaway agent refused again and again writes one authorization.refused a minute per reason; the next one says how many were not written', async () => {
    const caps = { per_authorization_cap_units: '5000000', daily_cap_units: '6000000', approval_threshold_units: '1000000', units_scale: 6, currency: 'USD' };
    await call(ledger.url, 'PUT', `/agents/${actors.agentId}/policy`, { token: ledger.adminToken, body: caps });
    expect((await call(ledger.url, 'POST', `/agents/${actors.agentId}/suspend`, { token: ledger.adminToken, body: {} })).status).toBe(200);
    // Every request is still refused and answered as before; only the first writes its event.
    for (let i = 0; i < 25; i += 1) {
      const refused = await request('1000');
      expect([refused.status, refused.body.error?.reason_code]).toEqual([403, 'agent_suspended']);
    }
    expect((await only('authorization.refused')).map((event) => event.details)).toEqual([{ reason: 'agent_suspended' }]);
    ledger.advance(59_000);
    expect((await request('2000')).status).toBe(403);
    expect(await only('authorization.refused')).toHaveLength(1);
    // A minute after the last one written: written again, with the 25 counted since.
    ledger.advance(2_000);
    expect((await request('3000')).status).toBe(403);
    const afterAMinute = await only('authorization.refused');
    expect(afterAMinute.map((event) => [event.amount_units, event.details])).toEqual([
      ['1000', { reason: 'agent_suspended' }],
      ['3000', { reason: 'agent_suspended', repeated: 25 }],
    ]);
    // Another reason is another run: written at once, then counted.
    expect((await call(ledger.url, 'POST', `/agents/${actors.agentId}/resume`, { token: ledger.adminToken })).status).toBe(200);
    for (let i = 0; i < 3; i += 1) expect((await request('5000001')).status).toBe(422);
    expect((await request('1000')).status).toBe(201);
    const refusals = await only('authorization.refused');
    expect(refusals.map((event) => event.details)).toEqual([
      { reason: 'agent_suspended' },
      { reason: 'agent_suspended', repeated: 25 },
      { reason: 'per_authorization_cap_exceeded', limit: 'per_authorization_cap_units' },
    ]);
    // The run starts again after its event: the next one written counts only what came after.
    ledger.advance(61_000);
    expect((await request('5000002')).status).toBe(422);
    expect((await only('authorization.refused')).at(-1)).toMatchObject({ amount_units: '5000002', details: { reason: 'per_authorization_cap_exceeded', limit: 'per_authorization_cap_units', repeated: 2 } });
    expect(outboxViolations()).toEqual([]);
  });

  it('expired when read, once: the status it had; reading again appends nothing', async () => {
    const waiting = await requested('2000000');
    const approved = await requested('500000');
    ledger.advance(3_601_000);
    for (let i = 0; i < 2; i += 1) {
      await call(ledger.url, 'GET', `/authorizations/${waiting}`, { token: ledger.adminToken });
      await call(ledger.url, 'GET', '/authorizations', { token: ledger.adminToken });
    }
    expect((await only('authorization.expired')).map((event) => [event.authorization_id, event.details.status_before])).toEqual([
      [waiting, 'requested'],
      [approved, 'approved'],
    ]);
    expect(outboxViolations()).toEqual([]);
  });
});

describe('GET /events?wait_seconds', () => {
  const poll = (query: string) => call<EventsAnswer>(ledger.url, 'GET', `/events${query}`, { token: actors.approver });

  it('answers as soon as an event follows the cursor, with only that event', async () => {
    await requested('500000');
    const waiting = poll('?after=1&wait_seconds=30');
    const tokenId = await requested('600000');
    const answer = await waiting;
    expect(answer.status).toBe(200);
    expect(answer.body.events.map((event) => [event.event_id, event.authorization_id])).toEqual([['2', tokenId]]);
  });

  it('waits past events of other types for the one asked for', async () => {
    const waiting = poll('?types=authorization.settled&wait_seconds=30');
    const tokenId = await requested('600000');
    await executor(`${tokenId}/claim`, claimBody(ledger, tokenId, 'exe_1'));
    await executor(`${tokenId}/settle`, { execution_id: 'exe_1', receipt: preciseReceipt(3000n) });
    expect((await waiting).body.events.map((event) => event.type)).toEqual(['authorization.settled']);
  });

  it('answers empty at its deadline; refuses a wait over 30 seconds with its field path', async () => {
    expect((await poll('?wait_seconds=1')).body).toEqual({ events: [], next_after: '0', more: false });
    const bad = await poll('?wait_seconds=31');
    expect([bad.status, bad.body.error?.fields]).toEqual([400, ['wait_seconds']]);
  });

  it('sees an event another connection to the same file wrote (its own slow poll)', async () => {
    const other = await startTestLedger({ eventPollMs: 20 });
    const db = new Database(other.databasePath);
    db.defaultSafeIntegers(true);
    try {
      const its = await setUpActors(other);
      const waiting = call<EventsAnswer>(other.url, 'GET', `/events?types=authorization.requested&wait_seconds=30`, { token: its.approver });
      // Another service on another connection (as another process would be): no signal reaches the app's waiters.
      const service = createLedgerService({ db, now: () => Date.now(), contractLevel: 'v4.5', authorizationTtlMs: 60_000, defaultPolicy: DEFAULT_POLICY });
      const made = service.requestAuthorization(its.agentId, { amount_units: 1000n, currency: 'USD' });
      expect((await waiting).body.events.map((event) => event.authorization_id)).toEqual([made.authorization.token_id]);
    } finally {
      db.close();
      await other.close();
    }
  });

  it('is answered at once when the ledger stops, and stopping does not wait out its deadline', async () => {
    const other = await startTestLedger();
    const its = await setUpActors(other);
    const waiting = call<EventsAnswer>(other.url, 'GET', '/events?after=999&wait_seconds=30', { token: its.approver });
    // The poll is in once the server holds its connection (and a moment more for its handler to start waiting).
    while ((await other.connections()) === 0) await new Promise((resolve) => setTimeout(resolve, 10));
    await new Promise((resolve) => setTimeout(resolve, 100));
    await other.close();
    expect((await waiting).body.events).toEqual([]);
  }, 20_000);
});

describe('the periodic expiry sweep', () => {
  it('records an expiry when nobody reads the authorization', async () => {
    const other = await startTestLedger({ expirySweepMs: 20 });
    try {
      const its = await setUpActors(other);
      const made = await call<{ authorization: { token_id: string } }>(other.url, 'POST', '/authorizations', {
        token: its.agent,
        body: { amount_units: '2000000', units_scale: 6, currency: 'USD', target_id: `t-${randomUUID()}` },
      });
      other.advance(3_601_000);
      const expired = await call<EventsAnswer>(other.url, 'GET', '/events?types=authorization.expired&wait_seconds=30', { token: its.approver });
      expect(expired.body.events.map((event) => [event.authorization_id, event.details.status_before])).toEqual([[made.body.authorization.token_id, 'requested']]);
    } finally {
      await other.close();
    }
  });
});
