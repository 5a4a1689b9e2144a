import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { call, setUpActors, startTestLedger, type Actors, type TestLedger } from '../support/ledger.js';

/*
 * Policy changes without lost updates (issue 27 item 4): `PUT /agents/{id}/policy` with
 * `If-Match: <version>` replaces the policy only if it is still at that version. A real ledger
 * app on a real SQLite file and a loopback port; what did (not) change is read from the file.
 */

interface PolicyAnswer {
  policy: { version: string; per_authorization_cap_units: string; daily_cap_units: string; approval_threshold_units: string; source: string };
}
interface ErrorAnswer {
  error: { code: string; reason_code?: string; fields?: string[]; current_version?: string };
}

let ledger: TestLedger;
let actors: Actors;
let path: string;

beforeEach(async () => {
  ledger = await startTestLedger();
  actors = await setUpActors(ledger);
  path = `/agents/${actors.agentId}/policy`;
});

afterEach(async () => {
  await ledger.close();
});

const policyBody = (cap: string) => ({ per_authorization_cap_units: cap, daily_cap_units: '20000000', approval_threshold_units: '1000000', units_scale: 6, currency: 'USD' });

function put<T = PolicyAnswer>(body: unknown, ifMatch?: string) {
  return call<T>(ledger.url, 'PUT', path, { token: ledger.adminToken, body, ...(ifMatch === undefined ? {} : { headers: { 'if-match': ifMatch } }) });
}

/** The agent's policy row as the database file holds it. */
function storedPolicy() {
  return ledger.query<Record<string, unknown>>('SELECT * FROM policies WHERE agent_id = ?', actors.agentId);
}

describe('PUT /agents/{id}/policy with If-Match', () => {
  it('without If-Match replaces the policy whatever its version, as before the header existed', async () => {
    expect((await put(policyBody('4000000'))).body.policy).toMatchObject({ version: '2', per_authorization_cap_units: '4000000' });
    expect((await put(policyBody('3000000'))).body.policy).toMatchObject({ version: '3', per_authorization_cap_units: '3000000' });
  });

  it('with the current version replaces it and moves the version on; the quoted entity-tag form is the same', async () => {
    const first = await put(policyBody('4000000'), '1');
    expect(first).toMatchObject({ status: 200, body: { policy: { version: '2', per_authorization_cap_units: '4000000', source: 'operator' } } });
    const second = await put(policyBody('3000000'), '"2"');
    expect(second).toMatchObject({ status: 200, body: { policy: { version: '3', per_authorization_cap_units: '3000000' } } });
  });

  it('with a stale version is 412 policy_version_mismatch naming the current version, and changes nothing', async () => {
    await put(policyBody('4000000'), '1');
    const before = storedPolicy();
    const stale = await put<ErrorAnswer>(policyBody('1000000'), '1');
    expect(stale).toEqual({ status: 412, body: { error: { code: 'policy_version_mismatch', current_version: '2' } } });
    expect(storedPolicy()).toEqual(before);
    // A version the policy has not reached yet is just as stale.
    expect(await put<ErrorAnswer>(policyBody('1000000'), '7')).toEqual({ status: 412, body: { error: { code: 'policy_version_mismatch', current_version: '2' } } });
    expect(storedPolicy()).toEqual(before);
    const logged = ledger.logs().filter((line) => line.event === 'http_request' && line.method === 'PUT' && line.status === 412);
    expect(logged).toEqual([expect.objectContaining({ route: '/agents/:agent_id/policy', code: 'policy_version_mismatch' })]);
  });

  it('keeps a policy that follows the default following it when the precondition fails', async () => {
    const before = storedPolicy();
    expect(before).toEqual([expect.objectContaining({ version: 1n, follows_default: 1n })]);
    expect((await put<ErrorAnswer>(policyBody('1000000'), '2')).status).toBe(412);
    expect(storedPolicy()).toEqual(before);
  });

  it.each([['abc'], ['1.5'], ['-1'], ['1e3'], ['1, 2'], ['W/"1"'], ['*'], ['"1'], [''], ['12345678901234567890'], ['9223372036854775808']])(
    'a malformed If-Match %j is 400 invalid_request with the field path if-match, and changes nothing',
    async (value) => {
      const before = storedPolicy();
      const result = await put<ErrorAnswer>(policyBody('1000000'), value);
      expect(result).toEqual({ status: 400, body: { error: { code: 'invalid_request', fields: ['if-match'] } } });
      expect(JSON.stringify(result.body)).not.toContain('1000000');
      expect(storedPolicy()).toEqual(before);
    },
  );

  it('checks the credential first and the body before the version: a bad body is 400 whatever If-Match says', async () => {
    const unauthenticated = await call(ledger.url, 'PUT', path, { body: policyBody('1000000'), headers: { 'if-match': 'abc' } });
    expect(unauthenticated).toEqual({ status: 401, body: { error: { code: 'unauthorized' } } });
    const invalid = await put<ErrorAnswer>({ ...policyBody('1000000'), surprise: true }, '9');
    expect(invalid).toMatchObject({ status: 400, body: { error: { code: 'invalid_request', fields: ['surprise'] } } });
    const unknownAgent = await call(ledger.url, 'PUT', '/agents/agt_00000000-0000-4000-8000-000000000000/policy', {
      token: ledger.adminToken,
      body: policyBody('1000000'),
      headers: { 'if-match': '1' },
    });
    expect(unknownAgent).toEqual({ status: 404, body: { error: { code: 'not_found' } } });
  });

  it('of several changes made at once from the same version, exactly one lands', async () => {
    const caps = ['1000000', '2000000', '3000000', '4000000'];
    const results = await Promise.all(caps.map((cap) => put<PolicyAnswer & ErrorAnswer>(policyBody(cap), '1')));
    const won = results.filter((result) => result.status === 200);
    expect(won).toHaveLength(1);
    expect(results.filter((result) => result.status === 412).map((result) => result.body.error.current_version)).toEqual(['2', '2', '2']);
    const [stored] = storedPolicy();
    expect(stored).toMatchObject({ version: 2n, per_authorization_cap_units: BigInt(won[0]?.body.policy.per_authorization_cap_units ?? '0') });
  });
});

describe('authorization views carry the approver’s decision reason', () => {
  const request = async (amount: string) =>
    (
      await call<{ authorization: { token_id: string } }>(ledger.url, 'POST', '/authorizations', {
        token: actors.agent,
        body: { amount_units: amount, units_scale: 6, currency: 'USD' },
      })
    ).body.authorization.token_id;

  it('GET /authorizations/{id} (admin, approver, own agent), the admin’s list and the approvals answer decision_reason', async () => {
    const approved = await request('2000000');
    const denied = await request('3000000');
    const pending = await request('4000000');
    await call(ledger.url, 'POST', `/authorizations/${approved}/approve`, { token: actors.approver, body: { reason: 'within budget' } });
    await call(ledger.url, 'POST', `/authorizations/${denied}/deny`, { token: actors.approver, body: { reason: 'not this week' } });

    for (const token of [ledger.adminToken, actors.approver, actors.agent]) {
      const shown = await call<{ authorization: Record<string, unknown> }>(ledger.url, 'GET', `/authorizations/${approved}`, { token });
      expect(shown.body.authorization).toMatchObject({ status: 'approved', decision_reason: 'within budget' });
    }
    const listed = await call<{ authorizations: { token_id: string; decision_reason: string | null }[] }>(ledger.url, 'GET', '/authorizations', { token: ledger.adminToken });
    // By token id: three requests may share a millisecond, so their order is not the point here.
    expect(Object.fromEntries(listed.body.authorizations.map((a) => [a.token_id, a.decision_reason]))).toEqual({
      [pending]: null,
      [denied]: 'not this week',
      [approved]: 'within budget',
    });
    const approvals = await call<{ authorizations: Record<string, unknown>[] }>(ledger.url, 'GET', '/approvals', { token: actors.approver });
    expect(approvals.body.authorizations).toEqual([expect.objectContaining({ token_id: pending, status: 'requested', decided_by: null, decision_reason: null })]);
    // The reason is the one stored with the decision.
    expect(ledger.query('SELECT decision_reason FROM authorizations WHERE token_id = ?', denied)).toEqual([{ decision_reason: 'not this week' }]);
  });
});
