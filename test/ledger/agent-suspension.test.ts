import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { generateCapability } from '../../src/credentials/capability.js';
import { call, mintCredential, preciseReceipt, setUpActors, type Actors, type TestLedger, ledgerPerTest } from '../support/ledger.js';
import { ledgerConfig, spawnLedger } from '../support/ledger-process.js';
import { distinctive, secretShapeExamples } from '../support/secret-shapes.js';

/*
 * Issue 27 item 1 at the ledger: an operator suspends an agent (`POST /agents/{id}/suspend`,
 * admin) and resumes it (`/resume`). One transaction refuses the agent's new requests (403
 * `forbidden` / `agent_suspended`) and cancels its requested and approved authorizations nobody
 * claimed (`cancelled`, the hold freed); a claimed one runs on and settles. Both verbs are
 * idempotent. Bad input is refused with field paths and changes nothing. A real ledger app on a
 * real SQLite file (and, for the race, a `lexec ledger serve` process on the same file).
 */

interface Authorization {
  token_id: string;
  status: string;
  execution_id: string | null;
  cancellation: { reason: string; cancelled_at: string } | null;
}
interface Suspension {
  agent: { agent_id: string; name: string; status: string; suspended_at: string | null; suspension_reason: string | null; suspended_by: string | null };
  cancelled_authorizations: number;
  changed: boolean;
}

let ledger: TestLedger;
let actors: Actors;

ledgerPerTest((started, its) => {
  ledger = started;
  actors = its;
});

const exe = () => `exe_${randomUUID().replaceAll('-', '')}`;

async function request(amountUnits: string, token = actors.agent) {
  return call<{ authorization: Authorization; error?: unknown }>(ledger.url, 'POST', '/authorizations', {
    token,
    body: { amount_units: amountUnits, units_scale: 6, currency: 'USD', purpose: 'a poster' },
  });
}

async function created(amountUnits: string, status: 'approved' | 'requested', token = actors.agent): Promise<string> {
  const result = await request(amountUnits, token);
  expect(result.body.authorization.status).toBe(status);
  return result.body.authorization.token_id;
}

const suspend = (agentId: string, body?: unknown, token = ledger.adminToken) =>
  call<Suspension & { error?: unknown }>(ledger.url, 'POST', `/agents/${agentId}/suspend`, { token, ...(body === undefined ? {} : { body }) });
const resume = (agentId: string, body?: unknown, token = ledger.adminToken) =>
  call<Suspension & { error?: unknown }>(ledger.url, 'POST', `/agents/${agentId}/resume`, { token, ...(body === undefined ? {} : { body }) });
const claim = (tokenId: string, executionId: string) =>
  call<{ error?: unknown }>(ledger.url, 'POST', `/executor/authorizations/${tokenId}/claim`, { token: actors.executor, body: { execution_id: executionId } });
const status = (tokenId: string) => ledger.query<{ status: string; execution_id: string | null }>('SELECT status, execution_id FROM authorizations WHERE token_id = ?', tokenId)[0];
const spending = async (token = actors.agent) =>
  (await call<{ spending: { held_units: string; spent_units: string; agent_status: string } }>(ledger.url, 'GET', '/agent/spending', { token })).body.spending;
/** Everything the ledger holds about agents and authorizations: compared to prove nothing changed. */
const snapshot = () => ({
  agents: ledger.query('SELECT * FROM agents ORDER BY agent_id'),
  authorizations: ledger.query('SELECT * FROM authorizations ORDER BY token_id'),
});

describe('suspending an agent', () => {
  it('refuses its new requests and cancels its unclaimed authorizations in one step, holds freed; a claimed one settles once', async () => {
    // Expired before the suspension: it stays expired, it is not cancelled.
    const stale = await created('400000', 'approved');
    ledger.advance(3_601_000);
    const approved = await created('500000', 'approved');
    const requested = await created('2000000', 'requested');
    const claimed = await created('500000', 'approved');
    const execution = exe();
    expect((await claim(claimed, execution)).status).toBe(200);
    expect(await spending()).toMatchObject({ held_units: '3000000', spent_units: '0', agent_status: 'active' });

    const suspended = await suspend(actors.agentId, { reason: 'runaway loop' });
    expect(suspended.status).toBe(200);
    expect(suspended.body).toEqual({
      agent: { agent_id: actors.agentId, name: 'bot', status: 'suspended', created_at: (expect.any(String) as unknown), suspended_at: (expect.any(String) as unknown), suspension_reason: 'runaway loop', suspended_by: 'operator' },
      cancelled_authorizations: 2,
      changed: true,
    });
    expect([stale, approved, requested, claimed].map(status)).toEqual([
      { status: 'expired', execution_id: null },
      { status: 'cancelled', execution_id: null },
      { status: 'cancelled', execution_id: null },
      { status: 'claimed', execution_id: execution },
    ]);
    // The cancelled holds are freed; the claimed one still holds.
    expect(await spending()).toMatchObject({ held_units: '500000', spent_units: '0', agent_status: 'suspended' });

    // A new request is refused and holds nothing.
    const before = snapshot();
    expect(await request('1000')).toEqual({ status: 403, body: { error: { code: 'forbidden', reason_code: 'agent_suspended' } } });
    expect(snapshot()).toEqual(before);

    // A cancelled authorization can be neither claimed nor decided.
    expect((await claim(approved, exe())).body).toEqual({ error: { code: 'conflict', reason_code: 'authorization_cancelled' } });
    const approve = await call(ledger.url, 'POST', `/authorizations/${requested}/approve`, { token: actors.approver, body: {} });
    expect(approve).toEqual({ status: 409, body: { error: { code: 'conflict', reason_code: 'authorization_cancelled' } } });
    expect(snapshot()).toEqual(before);

    // The agent still reads its own: cancelled, and why.
    const shown = await call<{ authorization: Authorization }>(ledger.url, 'GET', `/authorizations/${approved}`, { token: actors.agent });
    expect(shown.body.authorization).toMatchObject({ status: 'cancelled', execution_id: null, cancellation: { reason: 'agent_suspended', cancelled_at: (expect.any(String) as unknown) }, settlement: null, release: null });
    const listed = await call<{ authorizations: Authorization[] }>(ledger.url, 'GET', '/authorizations?status=cancelled', { token: ledger.adminToken });
    expect(listed.body.authorizations.map((row) => row.token_id).sort()).toEqual([approved, requested].sort());

    // Money truth wins over the switch: the claimed execution settles, exactly once.
    const receipt = preciseReceipt(300_000n);
    const settle = () => call(ledger.url, 'POST', `/executor/authorizations/${claimed}/settle`, { token: actors.executor, body: { execution_id: execution, receipt } });
    expect(await settle()).toMatchObject({ status: 200, body: { replayed: false, authorization: { status: 'settled' } } });
    expect(await settle()).toMatchObject({ status: 200, body: { replayed: true } });
    expect(ledger.query('SELECT COUNT(*) AS n FROM settlements WHERE token_id = ?', claimed)).toEqual([{ n: 1n }]);
    expect(await spending()).toMatchObject({ held_units: '0', spent_units: '300000' });

    // Another agent is untouched.
    const other = await setUpActors(ledger, 'other-bot');
    expect((await request('1000', other.agent)).status).toBe(201);
    const agents = await call<{ agents: Suspension['agent'][] }>(ledger.url, 'GET', '/agents', { token: ledger.adminToken });
    expect(agents.body.agents.map((agent) => [agent.name, agent.status, agent.suspension_reason])).toEqual([
      ['bot', 'suspended', 'runaway loop'],
      ['other-bot', 'active', null],
    ]);
  });

  it('suspending twice answers the same, changes nothing and cancels nothing more; resuming lets it request again, cancelled ones stay cancelled', async () => {
    const approved = await created('500000', 'approved');
    const first = await suspend(actors.agentId, { reason: 'first reason' });
    expect(first.body).toMatchObject({ cancelled_authorizations: 1, changed: true });
    const after = snapshot();

    const again = await suspend(actors.agentId, { reason: 'another reason' });
    expect(again.status).toBe(200);
    expect(again.body).toEqual({ agent: first.body.agent, cancelled_authorizations: 0, changed: false });
    expect(snapshot()).toEqual(after);

    const resumed = await resume(actors.agentId);
    expect(resumed.body).toEqual({ agent: { ...first.body.agent, status: 'active', suspended_at: null, suspension_reason: null, suspended_by: null }, cancelled_authorizations: 0, changed: true });
    expect(status(approved)).toEqual({ status: 'cancelled', execution_id: null });
    const resumedState = snapshot();
    expect(await resume(actors.agentId)).toEqual({ status: 200, body: { ...resumed.body, changed: false } });
    expect(snapshot()).toEqual(resumedState);

    const fresh = await created('500000', 'approved');
    expect((await claim(fresh, exe())).status).toBe(200);
    expect((await claim(approved, exe())).body).toEqual({ error: { code: 'conflict', reason_code: 'authorization_cancelled' } });
  });

  it('takes no body at all: the reason is optional', async () => {
    const answer = await suspend(actors.agentId);
    expect(answer).toMatchObject({ status: 200, body: { agent: { status: 'suspended', suspension_reason: null }, changed: true } });
    expect((await resume(actors.agentId)).body).toMatchObject({ agent: { status: 'active' }, changed: true });
  });
});

describe('bad input to suspend and resume: a clear error with field paths, nothing changed', () => {
  const unknown = `agt_${randomUUID()}`;
  const cases: [string, () => ReturnType<typeof suspend>, number, unknown][] = [
    ['an unknown agent (suspend)', () => suspend(unknown, { reason: 'x' }), 404, { error: { code: 'not_found' } }],
    ['an unknown agent (resume)', () => resume(unknown), 404, { error: { code: 'not_found' } }],
    ['a malformed agent id', () => suspend('agt_nope', {}), 400, { error: { code: 'invalid_request', fields: ['agent_id'] } }],
    ['a reason of 501 characters', () => suspend(actors.agentId, { reason: 'x'.repeat(501) }), 400, { error: { code: 'invalid_request', fields: ['reason'] } }],
    ['a reason that is not text', () => suspend(actors.agentId, { reason: 42 }), 400, { error: { code: 'invalid_request', fields: ['reason'] } }],
    ['an unknown field', () => suspend(actors.agentId, { reason: 'x', agent_id: actors.agentId }), 400, { error: { code: 'invalid_request', fields: ['agent_id'] } }],
    ['a reason given to resume', () => resume(actors.agentId, { reason: 'x' }), 400, { error: { code: 'invalid_request', fields: ['reason'] } }],
    ['a body that is not an object', () => suspend(actors.agentId, ['x']), 400, { error: { code: 'invalid_request', fields: ['(document)'] } }],
  ];

  it.each(cases)('%s', async (_name, send, expectedStatus, expectedBody) => {
    await created('500000', 'approved');
    const before = snapshot();
    const answer = await send();
    expect(answer.status).toBe(expectedStatus);
    expect(answer.body).toEqual(expectedBody);
    expect(snapshot()).toEqual(before);
  });

  it.each(secretShapeExamples().slice(0, 6))('a reason holding %s is refused as secret_shaped_text, never echoed or logged', async (_name, secret) => {
    await created('500000', 'approved');
    const before = snapshot();
    const answer = await suspend(actors.agentId, { reason: `stop it, see ${secret}` });
    expect(answer).toEqual({ status: 400, body: { error: { code: 'invalid_request', reason_code: 'secret_shaped_text', fields: ['reason'] } } });
    expect(snapshot()).toEqual(before);
    expect(JSON.stringify(ledger.logs())).not.toContain(distinctive(secret));
  });

  it('only the admin capability may suspend or resume: the agent itself, an approver or an executor get a bare 401', async () => {
    const before = snapshot();
    for (const token of [actors.agent, actors.approver, actors.executor, actors.reconciliation, generateCapability('admin')]) {
      expect(await suspend(actors.agentId, {}, token)).toEqual({ status: 401, body: { error: { code: 'unauthorized' } } });
      expect(await resume(actors.agentId, {}, token)).toEqual({ status: 401, body: { error: { code: 'unauthorized' } } });
    }
    expect(snapshot()).toEqual(before);
  });
});

describe('a suspension racing claims and requests from another ledger process on the same database', () => {
  it('every authorization ends claimed (its claim answered) or cancelled (its claim refused), never both; a request after the suspension is refused', async () => {
    const dir = ledger.dir;
    const other = await spawnLedger(dir, ledgerConfig(dir, { database_path: ledger.databasePath, admin_capability_path: join(dir, 'credentials', 'admin.capability') }), 'race.json');
    try {
      const executor = await mintCredential(ledger, 'executor');
      const tokens: string[] = [];
      for (let i = 0; i < 24; i += 1) tokens.push(await created('100000', 'approved'));
      // Claims and requests at the other process; the suspension here, sent among them.
      const claims = tokens.map((tokenId) =>
        call<{ error?: { reason_code?: string } }>(other.url, 'POST', `/executor/authorizations/${tokenId}/claim`, { token: executor, body: { execution_id: `exe_${tokenId.replaceAll('-', '')}` } }),
      );
      const requests = tokens.slice(0, 8).map(() =>
        call<{ authorization?: Authorization; error?: { reason_code?: string } }>(other.url, 'POST', '/authorizations', { token: actors.agent, body: { amount_units: '1000', units_scale: 6, currency: 'USD' } }),
      );
      const suspension = await suspend(actors.agentId, { reason: 'race' });
      const [claimed, asked] = [await Promise.all(claims), await Promise.all(requests)];
      expect(suspension.status).toBe(200);

      let cancelled = 0;
      tokens.forEach((tokenId, index) => {
        const row = status(tokenId);
        const answer = claimed[index];
        if (answer?.status === 200) expect(row).toEqual({ status: 'claimed', execution_id: `exe_${tokenId.replaceAll('-', '')}` });
        else {
          expect(answer?.body).toEqual({ error: { code: 'conflict', reason_code: 'authorization_cancelled' } });
          expect(row).toEqual({ status: 'cancelled', execution_id: null });
          cancelled += 1;
        }
      });
      // A request answered 201 landed before the suspension, and the suspension cancelled it.
      for (const answer of asked) {
        if (answer.status === 201) expect(status(answer.body.authorization?.token_id ?? '')).toEqual({ status: 'cancelled', execution_id: null });
        else expect(answer).toEqual({ status: 403, body: { error: { code: 'forbidden', reason_code: 'agent_suspended' } } });
      }
      expect(suspension.body.cancelled_authorizations).toBe(cancelled + asked.filter((answer) => answer.status === 201).length);
      expect(ledger.query("SELECT COUNT(*) AS n FROM authorizations WHERE status = 'cancelled' AND execution_id IS NOT NULL")).toEqual([{ n: 0n }]);
      expect(ledger.query("SELECT COUNT(*) AS n FROM authorizations WHERE agent_id = ? AND status IN ('requested', 'approved')", actors.agentId)).toEqual([{ n: 0n }]);
      // After it, the other process refuses the agent too.
      const late = await call(other.url, 'POST', '/authorizations', { token: actors.agent, body: { amount_units: '1000', units_scale: 6, currency: 'USD' } });
      expect(late).toEqual({ status: 403, body: { error: { code: 'forbidden', reason_code: 'agent_suspended' } } });
    } finally {
      await other.stop();
    }
  }, 120_000);
});
