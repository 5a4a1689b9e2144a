import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { BugError } from '../../src/errors.js';
import { createEventStore } from '../../src/ledger/store/event-store.js';
import type { LedgerAuthorization, LedgerEventPage } from '../../src/ledger/wire/answers.js';
import { call, type Actors, type TestLedger, ledgerPerTest } from '../support/ledger.js';

/*
 * Issue 28 items 1 and 2, at the ledger's core: a spend request names the target and the prompt it
 * pays for (kept with the authorization, shown to whoever may read it), and the ledger writes its
 * events to an append-only outbox in the transaction of the change — read back with `GET /events`
 * after a cursor. An event carries ids, amounts as digit strings and ledger-made details: never the
 * prompt. A real ledger app on a real SQLite file.
 */

type EventsAnswer = LedgerEventPage & { error?: { code: string; fields?: string[] } };

let ledger: TestLedger;
let actors: Actors;

ledgerPerTest((started, its) => {
  ledger = started;
  actors = its;
});

const TARGET = 'lexec:target:v1:flux-schnell';
const PROMPT = 'a lighthouse at dusk, oil on canvas';

async function request(amountUnits: string, extra: Record<string, unknown> = { target_id: TARGET, prompt: PROMPT }): Promise<LedgerAuthorization> {
  const answer = await call<{ authorization: LedgerAuthorization }>(ledger.url, 'POST', '/authorizations', {
    token: actors.agent,
    body: { amount_units: amountUnits, units_scale: 6, currency: 'USD', purpose: 'a poster', ...extra },
  });
  expect(answer.status).toBe(201);
  return answer.body.authorization;
}

const events = (query = '', token = ledger.adminToken) => call<EventsAnswer>(ledger.url, 'GET', `/events${query}`, { token });

describe('spend requests name what they pay for', () => {
  it('keeps the target and the prompt with the authorization and shows them to the agent and its approver', async () => {
    const authorization = await request('2000000');
    expect(authorization).toMatchObject({ target_id: TARGET, prompt: PROMPT, status: 'requested' });
    const shown = await call<{ authorization: LedgerAuthorization }>(ledger.url, 'GET', `/authorizations/${authorization.token_id}`, { token: actors.approver });
    expect(shown.body.authorization).toMatchObject({ target_id: TARGET, prompt: PROMPT });
    const approvals = await call<{ authorizations: LedgerAuthorization[] }>(ledger.url, 'GET', '/approvals', { token: actors.approver });
    expect(approvals.body.authorizations.map((pending) => [pending.token_id, pending.prompt, pending.target_id])).toEqual([[authorization.token_id, PROMPT, TARGET]]);
  });

  it('takes a request that names neither (both null), and refuses a secret-shaped prompt or an over-long target with their field paths', async () => {
    const plain = await request('500000', {});
    expect(plain).toMatchObject({ target_id: null, prompt: null, status: 'approved' });
    const secret = await call<{ error: { fields: string[] } }>(ledger.url, 'POST', '/authorizations', {
      token: actors.agent,
      body: { amount_units: '1', units_scale: 6, currency: 'USD', prompt: 'use sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123456789 please', target_id: 'x'.repeat(201) },
    });
    expect(secret.status).toBe(400);
    expect(secret.body.error.fields.sort()).toEqual(['prompt', 'target_id']);
    expect(JSON.stringify(secret.body)).not.toContain('sk-ant-api03');
  });

  it('replays a repeat under the same idempotency key only with the same target and prompt', async () => {
    const body = { amount_units: '2000000', units_scale: 6, currency: 'USD', target_id: TARGET, prompt: PROMPT };
    const headers = { 'idempotency-key': 'poster-1' };
    const first = await call<{ authorization: LedgerAuthorization }>(ledger.url, 'POST', '/authorizations', { token: actors.agent, body, headers });
    const again = await call<{ authorization: LedgerAuthorization }>(ledger.url, 'POST', '/authorizations', { token: actors.agent, body, headers });
    expect([first.status, again.status]).toEqual([201, 200]);
    expect(again.body.authorization.token_id).toBe(first.body.authorization.token_id);
    const otherPrompt = await call<{ error: { reason_code: string } }>(ledger.url, 'POST', '/authorizations', { token: actors.agent, body: { ...body, prompt: 'another' }, headers });
    expect([otherPrompt.status, otherPrompt.body.error.reason_code]).toEqual([409, 'idempotency_key_reused']);
  });
});

describe('the events outbox', () => {
  it('records a request, and a request left for a human as waiting too, with amounts as digit strings and never the prompt', async () => {
    const auto = await request('500000');
    const waiting = await request('2000000');
    const page = await events();
    expect(page.status).toBe(200);
    expect(page.body.events.map((event) => [event.type, event.authorization_id])).toEqual([
      ['authorization.requested', auto.token_id],
      ['authorization.requested', waiting.token_id],
      ['approval.waiting', waiting.token_id],
    ]);
    expect(page.body.events[1]).toMatchObject({
      agent_id: actors.agentId,
      agent_name: 'bot',
      target_id: TARGET,
      amount_units: '2000000',
      units_scale: 6,
      currency: 'USD',
      details: { status: 'requested' },
    });
    expect(page.body.events.map((event) => Number(event.event_id))).toEqual([1, 2, 3]);
    expect(JSON.stringify(page.body)).not.toContain('lighthouse');
    expect(page.body).toMatchObject({ next_after: '3', more: false });
  });

  it('pages after a cursor, filters by type and agent, and is read by approvers but not agents (401, as every route a kind may not call)', async () => {
    for (let i = 0; i < 3; i += 1) await request('2000000');
    const first = await events('?limit=2');
    expect(first.body.events.map((event) => event.event_id)).toEqual(['1', '2']);
    expect(first.body).toMatchObject({ next_after: '2', more: true });
    const rest = await events(`?after=${first.body.next_after}`);
    expect(rest.body.events.map((event) => event.event_id)).toEqual(['3', '4', '5', '6']);
    const waiting = await events('?types=approval.waiting', actors.approver);
    expect(waiting.status).toBe(200);
    expect(waiting.body.events.map((event) => event.type)).toEqual(['approval.waiting', 'approval.waiting', 'approval.waiting']);
    const none = await events(`?agent_id=agt_00000000-0000-0000-0000-000000000000`);
    expect(none.body).toMatchObject({ events: [], next_after: '0', more: false });
    expect((await events('', actors.agent)).status).toBe(401);
  });

  it('refuses an unknown type, a bad cursor and a bad page size with their field paths', async () => {
    const bad = await events('?types=authorization.requested,spend.happened&after=x&limit=0');
    expect(bad.status).toBe(400);
    expect(bad.body.error?.fields?.sort()).toEqual(['after', 'limit', 'types[1]']);
  });

  it('is append-only, and an event appended outside a transaction is a bug', async () => {
    await request('500000');
    const db = new Database(ledger.databasePath);
    try {
      expect(() => db.prepare("UPDATE events SET type = 'authorization.denied'").run()).toThrow(/append-only/);
      expect(() => db.prepare('DELETE FROM events').run()).toThrow(/never deleted/);
      const store = createEventStore(db);
      expect(() => store.append({ type: 'agent.resumed', at: 0, agentId: null })).toThrow(BugError);
      expect(store.lastId()).toBe(1n);
    } finally {
      db.close();
    }
  });
});
