import { randomUUID } from 'node:crypto';
import { request as httpRequest } from 'node:http';
import { describe, expect, it } from 'vitest';
import { call, setUpActors, type Actors, type TestLedger, ledgerPerTest } from '../support/ledger.js';

/*
 * Issue 27 item 5 at the ledger: `Idempotency-Key` on `POST /authorizations`. While the
 * authorization a key opened is open (requested, or approved and unclaimed), the same key and body
 * answer it again (200, `Idempotent-Replayed: true`, `replayed: true`); another body is refused
 * 409 `idempotency_key_reused` with nothing changed; once it is claimed or final the key opens a
 * new one. Keys are per agent; a malformed key is 400 with its field path; a replay is not counted
 * by the velocity limits, and a suspended agent is refused whatever the key. A real ledger app on
 * a real SQLite file, its clock moved by the test; the race across processes is in
 * idempotency-key-process.test.ts.
 */

interface Authorization {
  token_id: string;
  status: string;
  amount_units: string;
  purpose: string | null;
  created_at: string;
}
interface Answer {
  authorization?: Authorization;
  replayed?: boolean;
  error?: { code: string; reason_code?: string; fields?: string[] };
}

let ledger: TestLedger;
let actors: Actors;

ledgerPerTest((started, its) => {
  ledger = started;
  actors = its;
});

/** Below the test policy's approval threshold (1 USD): approved at once. */
const SMALL = '500000';
/** Above it: requested, for an approver. */
const LARGE = '2000000';

/** One spend request with an optional Idempotency-Key; the answer, its status and its Idempotent-Replayed header. */
async function request(options: { key?: string; amountUnits?: string; purpose?: string | null; token?: string } = {}) {
  const { key, amountUnits = SMALL, purpose = 'a poster', token = actors.agent } = options;
  const response = await fetch(`${ledger.url}/authorizations`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', ...(key === undefined ? {} : { 'idempotency-key': key }) },
    body: JSON.stringify({ amount_units: amountUnits, units_scale: 6, currency: 'USD', ...(purpose === null ? {} : { purpose }) }),
  });
  return { status: response.status, replayedHeader: response.headers.get('idempotent-replayed'), body: (await response.json()) as Answer };
}

/** A request that opened a new authorization: 201, no replay header, `replayed: false`. */
async function opened(options: Parameters<typeof request>[0]): Promise<Authorization> {
  const answer = await request(options);
  expect(answer).toMatchObject({ status: 201, replayedHeader: null, body: { replayed: false } });
  return answer.body.authorization as Authorization;
}

/** A request answered as a replay of `tokenId`: 200, `Idempotent-Replayed: true`, `replayed: true`. */
async function replayed(options: Parameters<typeof request>[0], tokenId: string): Promise<Authorization> {
  const answer = await request(options);
  expect(answer).toMatchObject({ status: 200, replayedHeader: 'true', body: { replayed: true, authorization: { token_id: tokenId } } });
  return answer.body.authorization as Authorization;
}

const rows = (agentId = actors.agentId) =>
  ledger.query<{ token_id: string; status: string; idempotency_key: string | null }>('SELECT token_id, status, idempotency_key FROM authorizations WHERE agent_id = ? ORDER BY created_at, token_id', agentId);
const everything = () => ({
  authorizations: ledger.query('SELECT * FROM authorizations ORDER BY token_id'),
  requests: ledger.query('SELECT * FROM agent_requests ORDER BY requested_at'),
});
const held = async () => (await call<{ spending: { held_units: string } }>(ledger.url, 'GET', '/agent/spending', { token: actors.agent })).body.spending.held_units;
const exe = () => `exe_${randomUUID().replaceAll('-', '')}`;
const claim = (tokenId: string) => call(ledger.url, 'POST', `/executor/authorizations/${tokenId}/claim`, { token: actors.executor, body: { execution_id: exe() } });
const decide = (tokenId: string, verb: 'approve' | 'deny') => call(ledger.url, 'POST', `/authorizations/${tokenId}/${verb}`, { token: actors.approver, body: {} });

describe('Idempotency-Key on POST /authorizations', () => {
  it('the same key and body while the authorization is requested answer it again: 200, Idempotent-Replayed, the same token, one hold', async () => {
    const first = await opened({ key: 'job-1', amountUnits: LARGE });
    expect(first.status).toBe('requested');
    const again = await replayed({ key: 'job-1', amountUnits: LARGE }, first.token_id);
    expect(again).toEqual(first);
    // Approved by a human, still unclaimed: still the same one.
    expect((await decide(first.token_id, 'approve')).status).toBe(200);
    expect((await replayed({ key: 'job-1', amountUnits: LARGE }, first.token_id)).status).toBe('approved');
    expect(rows()).toEqual([{ token_id: first.token_id, status: 'approved', idempotency_key: 'job-1' }]);
    expect(await held()).toBe(LARGE);
  });

  it('an authorization the policy approved at once is answered again too; a request without a key opens a new one every time, as before', async () => {
    const first = await opened({ key: 'job-2' });
    expect(first.status).toBe('approved');
    await replayed({ key: 'job-2' }, first.token_id);
    const plain = [await opened({}), await opened({})];
    expect(new Set([first.token_id, ...plain.map((authorization) => authorization.token_id)]).size).toBe(3);
    expect(rows().map((row) => row.idempotency_key)).toEqual(['job-2', null, null]);
  });

  it.each([
    ['another amount', { amountUnits: '600000' }],
    ['another purpose', { purpose: 'a flyer' }],
    ['no purpose', { purpose: null }],
  ])('the same key with %s is 409 conflict / idempotency_key_reused, and nothing changes', async (_what, changed) => {
    const first = await opened({ key: 'job-3' });
    const before = everything();
    const refused = await request({ key: 'job-3', ...changed });
    expect(refused).toEqual({ status: 409, replayedHeader: null, body: { error: { code: 'conflict', reason_code: 'idempotency_key_reused', fields: ['idempotency-key'] } } });
    expect(everything()).toEqual(before);
    expect(rows()).toHaveLength(1);
    // The authorization it opened is untouched and still answered to its own body.
    await replayed({ key: 'job-3' }, first.token_id);
  });

  it('once the authorization is claimed the key is free: the same request opens a new authorization (a job repeated later gets a new hold)', async () => {
    const first = await opened({ key: 'job-4' });
    expect((await claim(first.token_id)).status).toBe(200);
    const second = await opened({ key: 'job-4' });
    expect(second.token_id).not.toBe(first.token_id);
    // Free means free: another body under the key is no conflict either, once nothing open holds it.
    expect((await claim(second.token_id)).status).toBe(200);
    await opened({ key: 'job-4', amountUnits: '700000' });
    expect(rows().map((row) => row.status)).toEqual(['claimed', 'claimed', 'approved']);
  });

  it('once the authorization is denied the key is free', async () => {
    const first = await opened({ key: 'job-5', amountUnits: LARGE });
    expect((await decide(first.token_id, 'deny')).status).toBe(200);
    const second = await opened({ key: 'job-5', amountUnits: LARGE });
    expect(second).toMatchObject({ status: 'requested' });
    expect(second.token_id).not.toBe(first.token_id);
  });

  it('an approved authorization past its expiry is never answered as usable, even before anything persisted the expiry: the key opens a new one', async () => {
    const first = await opened({ key: 'job-6' });
    ledger.advance(3_600_000);
    // Stored as approved still: nothing has read it since its expiry passed.
    expect(rows()).toEqual([{ token_id: first.token_id, status: 'approved', idempotency_key: 'job-6' }]);
    const second = await opened({ key: 'job-6' });
    expect(second).toMatchObject({ status: 'approved' });
    expect(rows()).toEqual([
      { token_id: first.token_id, status: 'expired', idempotency_key: 'job-6' },
      { token_id: second.token_id, status: 'approved', idempotency_key: 'job-6' },
    ]);
    expect(await held()).toBe(SMALL);
  });

  it('once an operator\'s suspension cancelled the authorization the key is free after the resumption; while suspended, a replay is refused agent_suspended', async () => {
    const first = await opened({ key: 'job-7', amountUnits: LARGE });
    expect((await call(ledger.url, 'POST', `/agents/${actors.agentId}/suspend`, { token: ledger.adminToken })).status).toBe(200);
    const before = everything();
    expect(await request({ key: 'job-7', amountUnits: LARGE })).toMatchObject({ status: 403, replayedHeader: null, body: { error: { code: 'forbidden', reason_code: 'agent_suspended' } } });
    expect(everything()).toEqual(before);
    expect((await call(ledger.url, 'POST', `/agents/${actors.agentId}/resume`, { token: ledger.adminToken })).status).toBe(200);
    const second = await opened({ key: 'job-7', amountUnits: LARGE });
    expect(second.token_id).not.toBe(first.token_id);
    expect(rows().map((row) => row.status)).toEqual(['cancelled', 'requested']);
  });

  it('keys are per agent: two agents with one key each get their own authorization, and each replays its own', async () => {
    const other = await setUpActors(ledger, 'other-bot');
    const mine = await opened({ key: 'shared-key' });
    const theirs = await opened({ key: 'shared-key', token: other.agent });
    expect(theirs.token_id).not.toBe(mine.token_id);
    await replayed({ key: 'shared-key' }, mine.token_id);
    await replayed({ key: 'shared-key', token: other.agent }, theirs.token_id);
    // Another body under the same key is one agent's business: the other's request still opens nothing new and conflicts only with its own.
    expect((await request({ key: 'shared-key', amountUnits: '600000', token: other.agent })).status).toBe(409);
    expect(rows()).toHaveLength(1);
    expect(rows(other.agentId)).toHaveLength(1);
  });

  it.each([
    ['empty', ''],
    ['of 256 characters', 'k'.repeat(256)],
    ['holding a tab', 'job\t9'],
    ['beyond ASCII', 'jöb'],
  ])('a key %s is 400 invalid_request with the field path idempotency-key; nothing is held or counted', async (_what, key) => {
    const answer = await fetch(`${ledger.url}/authorizations`, {
      method: 'POST',
      headers: { authorization: `Bearer ${actors.agent}`, 'content-type': 'application/json', 'idempotency-key': Buffer.from(key, 'utf8').toString('latin1') },
      body: JSON.stringify({ amount_units: SMALL, units_scale: 6, currency: 'USD' }),
    });
    expect(answer.status).toBe(400);
    const text = await answer.text();
    expect(JSON.parse(text)).toEqual({ error: { code: 'invalid_request', fields: ['idempotency-key'] } });
    if (key !== '') expect(text).not.toContain(key.slice(0, 4));
    expect(rows()).toEqual([]);
    // 255 printable characters, spaces and punctuation included, are a key.
    await opened({ key: `${'k'.repeat(250)} !~"\\` });
  });

  it('a key sent twice (two header lines) is 400 with the field path, not the two joined into one key "a, b"', async () => {
    const twice = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const sent = httpRequest(`${ledger.url}/authorizations`, { method: 'POST' }, (response) => {
        let body = '';
        response.setEncoding('utf8');
        response.on('data', (chunk: string) => (body += chunk));
        response.on('end', () => { resolve({ status: response.statusCode ?? 0, body }); });
      });
      sent.on('error', reject);
      sent.setHeader('authorization', `Bearer ${actors.agent}`);
      sent.setHeader('content-type', 'application/json');
      // An array value is sent as one header line per item.
      sent.setHeader('idempotency-key', ['job-a', 'job-b']);
      sent.end(JSON.stringify({ amount_units: SMALL, units_scale: 6, currency: 'USD' }));
    });
    expect(twice.status).toBe(400);
    expect(JSON.parse(twice.body)).toEqual({ error: { code: 'invalid_request', fields: ['idempotency-key'] } });
    expect(rows()).toEqual([]);
    // The key joined as Node would join it is still a key of its own when sent once.
    await opened({ key: 'job-a, job-b' });
  });

  it('a replay is not counted by the velocity limits: with one request a minute allowed, replays are answered and a new key is refused', async () => {
    const policy = { per_authorization_cap_units: '5000000', daily_cap_units: '20000000', approval_threshold_units: '1000000', units_scale: 6, currency: 'USD', max_requests_per_minute: 1 };
    expect((await call(ledger.url, 'PUT', `/agents/${actors.agentId}/policy`, { token: ledger.adminToken, body: policy })).status).toBe(200);
    const first = await opened({ key: 'job-10' });
    for (let index = 0; index < 3; index += 1) await replayed({ key: 'job-10' }, first.token_id);
    // A reused key with another body is refused as a conflict, not as a velocity refusal, and counts neither.
    expect((await request({ key: 'job-10', amountUnits: '1' })).status).toBe(409);
    expect(ledger.query('SELECT velocity_refused FROM agent_requests WHERE agent_id = ?', actors.agentId)).toEqual([{ velocity_refused: 0n }]);
    expect(await request({ key: 'job-11' })).toMatchObject({ status: 429, body: { error: { reason_code: 'velocity_exceeded' } } });
  });

  it('20 concurrent requests with one key open exactly one authorization and one hold; every answer names it', async () => {
    const answers = await Promise.all(Array.from({ length: 20 }, () => request({ key: 'burst', amountUnits: LARGE })));
    expect(answers.filter((answer) => answer.status === 201)).toHaveLength(1);
    expect(answers.filter((answer) => answer.status === 200 && answer.replayedHeader === 'true')).toHaveLength(19);
    expect(new Set(answers.map((answer) => answer.body.authorization?.token_id)).size).toBe(1);
    expect(rows()).toHaveLength(1);
    expect(await held()).toBe(LARGE);
  });
});
