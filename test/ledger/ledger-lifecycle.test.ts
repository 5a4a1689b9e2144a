import { randomUUID } from 'node:crypto';
import { beforeEach, describe, expect, it } from 'vitest';
import { call, legacyReceipt, preciseReceipt, setUpActors, startTestLedger, type Actors, type TestLedger, ledgerPerTest } from '../support/ledger.js';

interface Authorization {
  token_id: string;
  account_id: string;
  agent_id: string;
  status: string;
  amount_units: string;
  amount_cents: string;
  execution_id: string | null;
  settlement: { receipt_id: string; amount_units: string; amount_cents: string; receipt_shape: string } | null;
  release: { reason: string } | null;
}

let ledger: TestLedger;
let actors: Actors;

ledgerPerTest((started, its) => {
  ledger = started;
  actors = its;
});

async function request(amountUnits: string, token = actors.agent) {
  return call<{ authorization: Authorization; error?: { code: string; reason_code?: string } }>(ledger.url, 'POST', '/authorizations', {
    token,
    body: { amount_units: amountUnits, units_scale: 6, currency: 'USD', purpose: 'test' },
  });
}

async function approvedToken(amountUnits = '900000'): Promise<string> {
  const result = await request(amountUnits);
  expect(result.body.authorization.status).toBe('approved');
  return result.body.authorization.token_id;
}

const executor = (path: string, body: unknown) => call(ledger.url, 'POST', `/executor/authorizations/${path}`, { token: actors.executor, body });

describe('authorization lifecycle', () => {
  it('request under the threshold is approved by policy, then resolved, claimed and settled precisely', async () => {
    const requested = await request('900000');
    expect(requested.status).toBe(201);
    const authorization = requested.body.authorization;
    expect(authorization).toMatchObject({ status: 'approved', amount_units: '900000', amount_cents: '90', agent_id: actors.agentId });

    const resolved = await call<{ authorization: Record<string, unknown> }>(ledger.url, 'GET', `/executor/authorizations/${authorization.token_id}`, {
      token: actors.executor,
    });
    expect(resolved.body.authorization).toMatchObject({
      token_id: authorization.token_id,
      account_id: authorization.account_id,
      agent_id: actors.agentId,
      status: 'approved',
      held_units: '900000',
      units_scale: 6,
      currency: 'USD',
    });

    const executionId = `exe_${randomUUID()}`;
    const claimed = await executor(`${authorization.token_id}/claim`, { execution_id: executionId });
    expect(claimed).toMatchObject({ status: 200, body: { replayed: false, authorization: { status: 'claimed', execution_id: executionId } } });

    const settled = await executor(`${authorization.token_id}/settle`, { execution_id: executionId, receipt: preciseReceipt(3000n, 'rcpt_one') });
    expect(settled.status).toBe(200);
    expect(settled.body).toMatchObject({
      replayed: false,
      authorization: { status: 'settled', settlement: { receipt_id: 'rcpt_one', amount_units: '3000', amount_cents: '1', receipt_shape: 'precise' } },
    });

    const rows = ledger.query<{ amount_units: bigint; receipt_shape: string }>('SELECT amount_units, receipt_shape FROM settlements');
    expect(rows).toEqual([{ amount_units: 3000n, receipt_shape: 'precise' }]);
  });

  it('a conditional claim checks the hold in its own transaction: below it nothing is claimed, the answer is the authoritative resolution', async () => {
    const tokenId = await approvedToken('10000');
    const statusAtLedger = async () => (await call<{ authorization: Authorization }>(ledger.url, 'GET', `/authorizations/${tokenId}`, { token: ledger.adminToken })).body.authorization;

    const tooSmall = await executor(`${tokenId}/claim`, { execution_id: 'exe_1', require: { currency: 'USD', min_held_units: '10001' } });
    expect(tooSmall).toEqual({ status: 422, body: { error: { code: 'requirement_not_met', reason_code: 'hold_below_requirement', fields: ['require.min_held_units'] } } });
    expect(await statusAtLedger()).toMatchObject({ status: 'approved', execution_id: null });

    for (const require of [{ currency: 'EUR', min_held_units: '1' }, { currency: 'USD', min_held_units: '-1' }, { currency: 'USD', min_held_units: '1', extra: true }]) {
      const refused = await executor(`${tokenId}/claim`, { execution_id: 'exe_1', require });
      expect(refused.status).toBe(400);
      expect(JSON.stringify(refused.body)).toContain('require.');
    }
    expect((await statusAtLedger()).status).toBe('approved');

    const claimed = await executor(`${tokenId}/claim`, { execution_id: 'exe_1', require: { currency: 'USD', min_held_units: '10000' } });
    expect(claimed).toMatchObject({
      status: 200,
      body: { replayed: false, authorization: { token_id: tokenId, agent_id: actors.agentId, status: 'claimed', execution_id: 'exe_1', held_units: '10000', currency: 'USD' } },
    });
    // The same execution again: replayed, and still checked; another execution: refused.
    expect(await executor(`${tokenId}/claim`, { execution_id: 'exe_1', require: { currency: 'USD', min_held_units: '9000' } })).toMatchObject({ status: 200, body: { replayed: true } });
    expect(await executor(`${tokenId}/claim`, { execution_id: 'exe_1', require: { currency: 'USD', min_held_units: '20000' } })).toMatchObject({
      status: 422,
      body: { error: { reason_code: 'hold_below_requirement' } },
    });
    expect(await executor(`${tokenId}/claim`, { execution_id: 'exe_2', require: { currency: 'USD', min_held_units: '1' } })).toMatchObject({
      status: 409,
      body: { error: { reason_code: 'claimed_by_another_execution' } },
    });
    expect(await statusAtLedger()).toMatchObject({ status: 'claimed', execution_id: 'exe_1' });
  });

  it('a request above the threshold waits for an approver; approval lets it be claimed and released', async () => {
    const requested = await request('2000000');
    expect(requested.body.authorization.status).toBe('requested');
    const tokenId = requested.body.authorization.token_id;

    const pending = await call<{ authorizations: Authorization[] }>(ledger.url, 'GET', '/approvals', { token: actors.approver });
    expect(pending.body.authorizations.map((a) => a.token_id)).toEqual([tokenId]);

    const early = await executor(`${tokenId}/claim`, { execution_id: 'exe_1' });
    expect(early).toMatchObject({ status: 409, body: { error: { code: 'conflict', reason_code: 'authorization_requested' } } });

    const approved = await call<{ authorization: Authorization }>(ledger.url, 'POST', `/authorizations/${tokenId}/approve`, { token: actors.approver, body: {} });
    expect(approved.body.authorization.status).toBe('approved');
    const again = await call<{ authorization: Authorization }>(ledger.url, 'POST', `/authorizations/${tokenId}/approve`, { token: actors.approver });
    expect(again).toMatchObject({ status: 200, body: { authorization: { status: 'approved' } } });

    expect((await executor(`${tokenId}/claim`, { execution_id: 'exe_1' })).status).toBe(200);
    const released = await executor(`${tokenId}/release`, { execution_id: 'exe_1', reason: 'not_transmitted' });
    expect(released.body).toMatchObject({ replayed: false, authorization: { status: 'released', release: { reason: 'not_transmitted' } } });
  });

  it('a denied request can never be claimed, approved or settled', async () => {
    const tokenId = (await request('2000000')).body.authorization.token_id;
    const denied = await call<{ authorization: Authorization }>(ledger.url, 'POST', `/authorizations/${tokenId}/deny`, {
      token: actors.approver,
      body: { reason: 'too expensive' },
    });
    expect(denied.body.authorization).toMatchObject({ status: 'denied', decision_reason: 'too expensive' });
    expect((await executor(`${tokenId}/claim`, { execution_id: 'exe_1' })).body).toMatchObject({ error: { reason_code: 'authorization_denied' } });
    const approve = await call(ledger.url, 'POST', `/authorizations/${tokenId}/approve`, { token: actors.approver, body: {} });
    expect(approve).toMatchObject({ status: 409, body: { error: { reason_code: 'authorization_denied' } } });
  });

  it('projects whole cents conservatively: the hold is rounded up, never down', async () => {
    for (const [units, cents] of [
      ['1', '1'],
      ['10000', '1'],
      ['10001', '2'],
      ['999999', '100'],
    ]) {
      const result = await request(units ?? '');
      expect(result.body.authorization.amount_cents).toBe(cents);
    }
  });
});

describe('claim', () => {
  it('is idempotent for the same execution and a conflict for another', async () => {
    const tokenId = await approvedToken();
    expect((await executor(`${tokenId}/claim`, { execution_id: 'exe_a' })).body).toMatchObject({ replayed: false });
    expect((await executor(`${tokenId}/claim`, { execution_id: 'exe_a' })).body).toMatchObject({ replayed: true, authorization: { status: 'claimed' } });
    expect(await executor(`${tokenId}/claim`, { execution_id: 'exe_b' })).toMatchObject({
      status: 409,
      body: { error: { code: 'conflict', reason_code: 'claimed_by_another_execution' } },
    });
  });

  it('an unknown token is 404', async () => {
    expect((await executor(`${randomUUID()}/claim`, { execution_id: 'exe_a' })).status).toBe(404);
  });
});

describe('settle', () => {
  let tokenId: string;
  beforeEach(async () => {
    tokenId = await approvedToken('900000');
    await executor(`${tokenId}/claim`, { execution_id: 'exe_a' });
  });

  it('is idempotent by receipt id; the same id with a different body conflicts', async () => {
    const receipt = preciseReceipt(3000n, 'rcpt_same');
    expect((await executor(`${tokenId}/settle`, { execution_id: 'exe_a', receipt })).body).toMatchObject({ replayed: false });
    // Same receipt, keys in another order: a replay.
    const reordered = Object.fromEntries(Object.entries(receipt).reverse());
    expect((await executor(`${tokenId}/settle`, { execution_id: 'exe_a', receipt: reordered })).body).toMatchObject({
      replayed: true,
      authorization: { status: 'settled' },
    });
    const changed = await executor(`${tokenId}/settle`, { execution_id: 'exe_a', receipt: { ...receipt, amount_units: '3001' } });
    expect(changed).toMatchObject({ status: 409, body: { error: { reason_code: 'receipt_conflict', fields: ['receipt.receipt_id'] } } });
    const another = await executor(`${tokenId}/settle`, { execution_id: 'exe_a', receipt: preciseReceipt(3000n, 'rcpt_other') });
    expect(another).toMatchObject({ status: 409, body: { error: { reason_code: 'authorization_settled' } } });
    expect(ledger.query('SELECT * FROM settlements')).toHaveLength(1);
  });

  it('refuses more than the held amount', async () => {
    const result = await executor(`${tokenId}/settle`, { execution_id: 'exe_a', receipt: preciseReceipt(900001n) });
    expect(result).toMatchObject({ status: 422, body: { error: { code: 'amount_exceeds_hold', fields: ['receipt.amount_units'] } } });
    expect((await executor(`${tokenId}/settle`, { execution_id: 'exe_a', receipt: preciseReceipt(900000n) })).status).toBe(200);
  });

  it('refuses a settle by another execution', async () => {
    const result = await executor(`${tokenId}/settle`, { execution_id: 'exe_b', receipt: preciseReceipt(1n) });
    expect(result).toMatchObject({ status: 409, body: { error: { reason_code: 'claimed_by_another_execution' } } });
  });

  it('settle XOR release: release refused after settle, settle refused after release', async () => {
    await executor(`${tokenId}/settle`, { execution_id: 'exe_a', receipt: preciseReceipt(10n) });
    expect(await executor(`${tokenId}/release`, { execution_id: 'exe_a', reason: 'cancelled' })).toMatchObject({
      status: 409,
      body: { error: { reason_code: 'authorization_settled' } },
    });

    const other = await approvedToken('900000');
    await executor(`${other}/claim`, { execution_id: 'exe_b' });
    expect((await executor(`${other}/release`, { execution_id: 'exe_b', reason: 'not_transmitted' })).body).toMatchObject({ replayed: false });
    expect((await executor(`${other}/release`, { execution_id: 'exe_b', reason: 'not_transmitted' })).body).toMatchObject({ replayed: true });
    expect(await executor(`${other}/settle`, { execution_id: 'exe_b', receipt: preciseReceipt(10n) })).toMatchObject({
      status: 409,
      body: { error: { reason_code: 'authorization_released' } },
    });
    expect(ledger.query('SELECT token_id FROM settlements')).toEqual([{ token_id: tokenId }]);
    expect(ledger.query('SELECT token_id FROM releases')).toEqual([{ token_id: other }]);
  });

  it('accepts the legacy whole-cent receipt shape, converting exactly to micro-units', async () => {
    const result = await executor(`${tokenId}/settle`, { execution_id: 'exe_a', receipt: legacyReceipt(7) });
    expect(result.body).toMatchObject({ authorization: { settlement: { amount_units: '70000', amount_cents: '7', receipt_shape: 'legacy_cents' } } });
  });
});

describe('expiry', () => {
  it('the executor resolve answers an expired authorization as expired and persists the expiry', async () => {
    const tokenId = await approvedToken('900000');
    const resolve = () => call<{ authorization: { status: string } }>(ledger.url, 'GET', `/executor/authorizations/${tokenId}`, { token: actors.executor });
    expect((await resolve()).body.authorization.status).toBe('approved');
    expect(ledger.query('SELECT status, closed_at FROM authorizations WHERE token_id = ?', tokenId)).toEqual([{ status: 'approved', closed_at: null }]);
    ledger.advance(3_600_000);
    expect((await resolve()).body.authorization.status).toBe('expired');
    expect(ledger.query('SELECT status FROM authorizations WHERE token_id = ?', tokenId)).toEqual([{ status: 'expired' }]);
  });

  it('an unclaimed authorization expires; it can then be neither claimed nor settled, and stops counting against the cap', async () => {
    const tokenId = await approvedToken('900000');
    ledger.advance(3_600_000);
    expect(await executor(`${tokenId}/claim`, { execution_id: 'exe_a' })).toMatchObject({ status: 409, body: { error: { reason_code: 'authorization_expired' } } });
    expect(await executor(`${tokenId}/settle`, { execution_id: 'exe_a', receipt: preciseReceipt(1n) })).toMatchObject({
      status: 409,
      body: { error: { reason_code: 'authorization_expired' } },
    });
    const shown = await call<{ authorization: Authorization }>(ledger.url, 'GET', `/authorizations/${tokenId}`, { token: ledger.adminToken });
    expect(shown.body.authorization.status).toBe('expired');
    const approved = await call<{ authorizations: Authorization[] }>(ledger.url, 'GET', '/authorizations?status=approved', { token: ledger.adminToken });
    expect(approved.body.authorizations).toEqual([]);
    const expired = await call<{ authorizations: Authorization[] }>(ledger.url, 'GET', '/authorizations?status=expired&limit=5', { token: ledger.adminToken });
    expect(expired.body.authorizations.map((authorization) => authorization.token_id)).toEqual([tokenId]);
    // The expired 0.9 USD hold no longer counts: four 5 USD holds fill the 20 USD daily cap exactly.
    for (let index = 0; index < 4; index += 1) expect((await request('5000000')).status).toBe(201);
    expect((await request('1')).body.error?.reason_code).toBe('daily_cap_exceeded');
  });

  it('a claimed authorization does not expire under a running execution', async () => {
    const tokenId = await approvedToken();
    await executor(`${tokenId}/claim`, { execution_id: 'exe_a' });
    ledger.advance(7_200_000);
    expect((await executor(`${tokenId}/settle`, { execution_id: 'exe_a', receipt: preciseReceipt(5n) })).status).toBe(200);
  });
});

describe('policy caps', () => {
  it('refuses a request above the per-authorization cap', async () => {
    const result = await request('5000001');
    expect(result).toMatchObject({ status: 422, body: { error: { code: 'policy_refused', reason_code: 'per_authorization_cap_exceeded' } } });
    expect(ledger.query('SELECT * FROM authorizations')).toHaveLength(0);
  });

  it('counts holds and settlements in the rolling day, and frees released holds', async () => {
    const first = await approvedToken('900000');
    await executor(`${first}/claim`, { execution_id: 'exe_a' });
    await executor(`${first}/settle`, { execution_id: 'exe_a', receipt: preciseReceipt(100000n) });
    // 20 USD cap: 0.1 settled, so 19.9 remain.
    for (const amount of ['5000000', '5000000', '5000000', '4900000']) expect((await request(amount)).status).toBe(201);
    expect((await request('1'))).toMatchObject({ status: 422, body: { error: { reason_code: 'daily_cap_exceeded' } } });
    ledger.advance(24 * 3_600_000 + 1);
    expect((await request('5000000')).status).toBe(201);
  });

  it('GET /agent/spending tells the calling agent its policy, what it spent and holds in the window, and what is left', async () => {
    const spending = async (token = actors.agent) => call<{ spending: Record<string, unknown> }>(ledger.url, 'GET', '/agent/spending', { token });
    expect((await spending()).body.spending).toMatchObject({ agent_id: actors.agentId, window: 'rolling_24h', spent_units: '0', held_units: '0', remaining_units: '20000000' });

    const settled = await approvedToken('900000');
    await executor(`${settled}/claim`, { execution_id: 'exe_s' });
    await executor(`${settled}/settle`, { execution_id: 'exe_s', receipt: preciseReceipt(700000n) });
    const claimed = await approvedToken('300000');
    await executor(`${claimed}/claim`, { execution_id: 'exe_c' });
    await request('2000000'); // above the threshold: requested, held
    const released = await approvedToken('400000');
    await executor(`${released}/claim`, { execution_id: 'exe_r' });
    await executor(`${released}/release`, { execution_id: 'exe_r', reason: 'not_transmitted' });

    const now = await spending();
    expect(now.status).toBe(200);
    expect(now.body.spending).toMatchObject({
      spent_units: '700000',
      held_units: '2300000',
      remaining_units: String(20_000_000 - 700_000 - 2_300_000),
      units_scale: 6,
      currency: 'USD',
      policy: { per_authorization_cap_units: '5000000', daily_cap_units: '20000000', approval_threshold_units: '1000000' },
    });
    // The operator sees the same standing for that agent with the admin capability.
    const operator = await call<{ spending: Record<string, unknown> }>(ledger.url, 'GET', `/agents/${actors.agentId}/spending`, { token: ledger.adminToken });
    expect(operator).toEqual({ status: 200, body: { spending: { ...now.body.spending, as_of: expect.any(String) as unknown } } });
    // What remains is exactly what the daily cap still lets through: one more unit is refused.
    expect(now.body.spending.remaining_units).toBe('17000000');
    for (const amount of ['5000000', '5000000', '5000000', '2000000']) expect((await request(amount)).status).toBe(201);
    expect(await request('1')).toMatchObject({ status: 422, body: { error: { reason_code: 'daily_cap_exceeded' } } });
    expect((await spending()).body.spending).toMatchObject({ remaining_units: '0' });

    // A day later the window is empty again; only agents may ask, each for itself.
    ledger.advance(24 * 3_600_000 + 1);
    expect((await spending()).body.spending).toMatchObject({ spent_units: '0', held_units: '0', remaining_units: '20000000' });
    expect((await spending(ledger.adminToken)).status).toBe(401);
    expect((await spending(actors.executor)).status).toBe(401);
  });

  it('many concurrent requests never push an agent past its daily cap', async () => {
    const results = await Promise.all(Array.from({ length: 60 }, () => request('900000')));
    const accepted = results.filter((result) => result.status === 201);
    const refused = results.filter((result) => result.status === 422);
    expect(accepted).toHaveLength(22); // floor(20 000 000 / 900 000)
    expect(refused).toHaveLength(38);
    for (const result of refused) expect(result.body.error?.reason_code).toBe('daily_cap_exceeded');
    const [sum] = ledger.query<{ total: bigint }>('SELECT SUM(amount_units) AS total FROM authorizations');
    expect(sum?.total).toBe(22n * 900_000n);
  });

  it('the operator can change an agent policy; the version moves, and an earlier request keeps the policy it was decided under', async () => {
    const path = `/agents/${actors.agentId}/policy`;
    const before = await call<{ policy: { version: string } }>(ledger.url, 'GET', path, { token: ledger.adminToken });
    expect(before.body.policy).toMatchObject({ per_authorization_cap_units: '5000000', version: '1' });
    const waiting = await request('2000000');
    const decidedUnder = { version: '1', per_authorization_cap_units: '5000000', daily_cap_units: '20000000', approval_threshold_units: '1000000' };
    expect(waiting.body.authorization).toMatchObject({ status: 'requested', policy: decidedUnder });
    // Denied, so its hold does not count against the smaller daily cap set below.
    expect((await call(ledger.url, 'POST', `/authorizations/${waiting.body.authorization.token_id}/deny`, { token: actors.approver, body: {} })).status).toBe(200);
    const updated = await call<{ policy: Record<string, unknown> }>(ledger.url, 'PUT', path, {
      token: ledger.adminToken,
      body: { per_authorization_cap_units: '100', daily_cap_units: '1000', approval_threshold_units: '0', units_scale: 6, currency: 'USD' },
    });
    expect(updated.body.policy).toMatchObject({ per_authorization_cap_units: '100', daily_cap_units: '1000', version: '2' });
    const later = await request('50');
    expect(later.body.authorization).toMatchObject({ status: 'requested', policy: { version: '2', per_authorization_cap_units: '100', daily_cap_units: '1000', approval_threshold_units: '0' } });
    const shown = await call<{ authorization: Record<string, unknown> }>(ledger.url, 'GET', `/authorizations/${waiting.body.authorization.token_id}`, { token: actors.approver });
    expect(shown.body.authorization.policy).toEqual(decidedUnder);
  });
});

describe('contract level', () => {
  it('an older (v4.4) ledger refuses the precise receipt with a distinct code and still takes whole cents', async () => {
    const older = await startTestLedger({ contractLevel: 'v4.4' });
    try {
      const who = await setUpActors(older);
      const make = async () => {
        const created = await call<{ authorization: { token_id: string } }>(older.url, 'POST', '/authorizations', {
          token: who.agent,
          body: { amount_units: '900000', units_scale: 6, currency: 'USD' },
        });
        const tokenId = created.body.authorization.token_id;
        await call(older.url, 'POST', `/executor/authorizations/${tokenId}/claim`, { token: who.executor, body: { execution_id: 'exe_1' } });
        return tokenId;
      };
      const precise = await make();
      const refused = await call(older.url, 'POST', `/executor/authorizations/${precise}/settle`, {
        token: who.executor,
        body: { execution_id: 'exe_1', receipt: preciseReceipt(3000n) },
      });
      expect(refused).toMatchObject({ status: 422, body: { error: { code: 'precise_receipt_unsupported' } } });
      expect(older.query("SELECT status FROM authorizations WHERE token_id = ?", precise)).toEqual([{ status: 'claimed' }]);

      const legacy = await make();
      const accepted = await call(older.url, 'POST', `/executor/authorizations/${legacy}/settle`, {
        token: who.executor,
        body: { execution_id: 'exe_1', receipt: legacyReceipt(1) },
      });
      expect(accepted.status).toBe(200);
      const version = await call(older.url, 'GET', '/version');
      expect(version.body).toMatchObject({ contract_version: 'v4.5', contract_level: 'v4.4' });
    } finally {
      await older.close();
    }
  });
});

describe('reconciliation', () => {
  it('the executor parks a claimed authorization; the reconciliation credential settles it with the evidence', async () => {
    const tokenId = await approvedToken();
    await executor(`${tokenId}/claim`, { execution_id: 'exe_a' });
    const opened = await executor(`${tokenId}/reconciliation`, { execution_id: 'exe_a', reason: 'billing_ambiguous', evidence: { provider_request_id: 'req_1' } });
    expect(opened.status).toBe(201);
    const again = await executor(`${tokenId}/reconciliation`, { execution_id: 'exe_a', reason: 'billing_ambiguous', evidence: {} });
    expect(again).toMatchObject({ status: 200, body: { replayed: true } });

    const listed = await call<{ records: { record_id: string; status: string; evidence: unknown }[] }>(ledger.url, 'GET', '/reconciliation-records?status=open', {
      token: actors.reconciliation,
    });
    expect(listed.body.records).toHaveLength(1);
    const record = listed.body.records[0];
    expect(record?.evidence).toEqual({ provider_request_id: 'req_1' });

    const resolved = await call(ledger.url, 'POST', `/reconciliation-records/${record?.record_id ?? ''}/resolve`, {
      token: actors.reconciliation,
      body: { resolution: 'settle', receipt: preciseReceipt(2500n) },
    });
    expect(resolved.body).toMatchObject({ replayed: false, record: { status: 'resolved', resolution: 'settled' } });
    const shown = await call<{ authorization: Authorization }>(ledger.url, 'GET', `/authorizations/${tokenId}`, { token: ledger.adminToken });
    expect(shown.body.authorization).toMatchObject({ status: 'settled', settlement: { amount_units: '2500' } });
    const contrary = await call(ledger.url, 'POST', `/reconciliation-records/${record?.record_id ?? ''}/resolve`, {
      token: actors.reconciliation,
      body: { resolution: 'release', reason: 'provider says no charge' },
    });
    expect(contrary).toMatchObject({ status: 409, body: { error: { reason_code: 'record_resolved' } } });
  });

  it('a release resolution frees the hold', async () => {
    const tokenId = await approvedToken();
    await executor(`${tokenId}/claim`, { execution_id: 'exe_a' });
    const opened = await executor(`${tokenId}/reconciliation`, { execution_id: 'exe_a', reason: 'submission_unconfirmed', evidence: {} });
    const recordId = (opened.body as { record: { record_id: string } }).record.record_id;
    const resolved = await call(ledger.url, 'POST', `/reconciliation-records/${recordId}/resolve`, {
      token: actors.reconciliation,
      body: { resolution: 'release', reason: 'provider confirms no charge' },
    });
    expect(resolved.body).toMatchObject({ record: { resolution: 'released', resolution_note: 'provider confirms no charge' } });
    expect((resolved.body as { record: { resolved_by: string } }).record.resolved_by).toMatch(/^cred_/);
    expect(ledger.query('SELECT status FROM authorizations WHERE token_id = ?', tokenId)).toEqual([{ status: 'released' }]);
  });
});

describe('agents see only their own authorizations', () => {
  it('another agent gets 404', async () => {
    const tokenId = await approvedToken();
    const other = await setUpActors(ledger, 'other-bot');
    expect((await call(ledger.url, 'GET', `/authorizations/${tokenId}`, { token: actors.agent })).status).toBe(200);
    expect((await call(ledger.url, 'GET', `/authorizations/${tokenId}`, { token: other.agent })).status).toBe(404);
  });
});
