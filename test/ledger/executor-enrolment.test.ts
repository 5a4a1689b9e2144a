import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { capabilityDigest, generateCapability } from '../../src/credentials/capability.js';
import { createLedgerClient } from '../../src/ledger/client/ledger-client.js';
import { call, startTestLedger, type TestLedger } from '../support/ledger.js';

/*
 * Enrolment of an executor host (ledger migration 15; docs/deployment.md "Enrolment"): the
 * operator issues a one-time token; the host redeems it once with the digests of the capabilities
 * it generated. Used, expired, revoked or unknown tokens are refused and nothing is registered.
 */

let ledger: TestLedger;

beforeEach(async () => {
  ledger = await startTestLedger();
});

afterEach(async () => {
  await ledger.close();
});

interface Issued {
  enrolment: { enrolment_id: string; status: string; host_name: string; agent_name: string };
  token: string;
}

async function issue(body: Record<string, unknown> = { host_name: 'builder-1' }): Promise<Issued> {
  const answer = await call<Issued>(ledger.url, 'POST', '/enrolments', { token: ledger.adminToken, body });
  expect(answer.status).toBe(201);
  return answer.body;
}

function hostCapabilities() {
  const executor = generateCapability('executor');
  const agent = generateCapability('agent');
  return { executor, agent, body: (agentName: string) => ({ agent_name: agentName, executor_digest_sha256: capabilityDigest(executor).toString('hex'), agent_digest_sha256: capabilityDigest(agent).toString('hex') }) };
}

const redeem = (token: string, body: unknown) => call(ledger.url, 'POST', '/enrolments/redeem', { token, body });
const credentialCount = () => Number(ledger.query<{ n: bigint }>('SELECT COUNT(*) AS n FROM credentials')[0]?.n);

describe('executor-host enrolment at the ledger', () => {
  it('a redeemed token registers the host’s executor and agent capabilities (which then work) and is refused the second time, registering nothing', async () => {
    const { token, enrolment } = await issue();
    expect(enrolment).toMatchObject({ status: 'open', host_name: 'builder-1', agent_name: 'builder-1' });
    const host = hostCapabilities();
    const first = await redeem(token, host.body('builder-1'));
    expect(first.status).toBe(201);
    expect(first.body).toMatchObject({ redemption: { host_name: 'builder-1', agent: { name: 'builder-1' } } });

    // The executor capability passes the executor's probe; the agent capability may request spend.
    expect((await call(ledger.url, 'GET', '/agents', { token: host.executor })).status).toBe(200);
    expect((await call(ledger.url, 'GET', '/agent/spending', { token: host.agent })).status).toBe(200);

    const before = credentialCount();
    const other = hostCapabilities();
    const second = await redeem(token, other.body('builder-1'));
    expect(second.status).toBe(403);
    expect(second.body).toEqual({ error: { code: 'enrolment_refused', reason_code: 'enrolment_token_used' } });
    expect(credentialCount()).toBe(before);
    expect((await call(ledger.url, 'GET', '/agents', { token: other.executor })).status).toBe(401);
  });

  it('an expired, a revoked and an unknown token are refused with nothing registered; a wrong agent leaves the token usable', async () => {
    const before = credentialCount();
    const expiring = await issue({ host_name: 'builder-2', ttl_minutes: 5 });
    ledger.advance(5 * 60_000);
    expect((await redeem(expiring.token, hostCapabilities().body('builder-2'))).body).toEqual({ error: { code: 'enrolment_refused', reason_code: 'enrolment_token_expired' } });

    const revoked = await issue({ host_name: 'builder-3' });
    const revocation = await call<{ changed: boolean; enrolment: { status: string } }>(ledger.url, 'POST', `/enrolments/${revoked.enrolment.enrolment_id}/revoke`, { token: ledger.adminToken, body: {} });
    expect(revocation.body).toMatchObject({ changed: true, enrolment: { status: 'revoked' } });
    expect((await redeem(revoked.token, hostCapabilities().body('builder-3'))).body).toEqual({ error: { code: 'enrolment_refused', reason_code: 'enrolment_token_revoked' } });

    const unknown = await redeem(`lexec_enrolment_${'A'.repeat(43)}`, hostCapabilities().body('builder-3'));
    expect(unknown.status).toBe(401);

    const agentBound = await issue({ host_name: 'builder-4', agent_name: 'ci' });
    expect((await redeem(agentBound.token, hostCapabilities().body('builder-4'))).body).toEqual({ error: { code: 'enrolment_refused', reason_code: 'enrolment_agent_mismatch' } });
    expect(credentialCount()).toBe(before);
    expect((await redeem(agentBound.token, hostCapabilities().body('ci'))).status).toBe(201);
  });

  it('the client names each refusal; issue, revocation and redemption are audited; the token is in no answer but the issue’s, no log and no audit event', async () => {
    const client = createLedgerClient({ url: ledger.url, token: ledger.adminToken });
    const { token, enrolment } = await client.issueEnrolment({ hostName: 'builder-5', agentName: null, ttlMinutes: 10 });
    const host = hostCapabilities();
    const redeemer = createLedgerClient({ url: ledger.url, token });
    await redeemer.redeemEnrolment({ agentName: 'builder-5', executorDigestSha256: host.body('x').executor_digest_sha256, agentDigestSha256: host.body('x').agent_digest_sha256 });
    await expect(redeemer.redeemEnrolment({ agentName: 'builder-5', executorDigestSha256: '0'.repeat(64), agentDigestSha256: '1'.repeat(64) })).rejects.toMatchObject({ code: 'enrolment_token_used' });
    const revoked = await client.issueEnrolment({ hostName: 'builder-6', agentName: null, ttlMinutes: 10 });
    expect(await client.revokeEnrolment(revoked.enrolment.enrolment_id)).toMatchObject({ changed: true });
    expect(await client.revokeEnrolment(revoked.enrolment.enrolment_id)).toMatchObject({ changed: false });
    await expect(createLedgerClient({ url: ledger.url, token: revoked.token }).redeemEnrolment({ agentName: 'builder-6', executorDigestSha256: '2'.repeat(64), agentDigestSha256: '3'.repeat(64) })).rejects.toMatchObject({
      code: 'enrolment_token_revoked',
    });

    const listed = await client.listEnrolments();
    expect(listed.map((entry) => [entry.host_name, entry.status])).toEqual([
      ['builder-5', 'redeemed'],
      ['builder-6', 'revoked'],
    ]);
    const audit = await client.audit({});
    const actions = audit.events.filter((event) => event.action.startsWith('enrolment_')).map((event) => [event.action, event.subject_id, event.actor_kind]);
    expect(actions).toEqual([
      ['enrolment_issued', enrolment.enrolment_id, 'admin'],
      ['enrolment_redeemed', enrolment.enrolment_id, 'ledger'],
      ['enrolment_issued', revoked.enrolment.enrolment_id, 'admin'],
      ['enrolment_revoked', revoked.enrolment.enrolment_id, 'admin'],
    ]);
    const everything = JSON.stringify([listed, audit, ledger.logs(), ledger.query('SELECT * FROM enrolments')], (_key, value: unknown) => (typeof value === 'bigint' ? value.toString() : value));
    for (const secret of [token, revoked.token]) expect(everything).not.toContain(secret.slice('lexec_enrolment_'.length));
  });

  it('refuses bad requests with their field paths', async () => {
    const bad = await call(ledger.url, 'POST', '/enrolments', { token: ledger.adminToken, body: { host_name: 'Not A Host', ttl_minutes: 0 } });
    expect(bad.status).toBe(400);
    expect(bad.body).toMatchObject({ error: { fields: expect.arrayContaining(['host_name', 'ttl_minutes']) as unknown } });
    // Only the admin issues.
    const host = hostCapabilities();
    expect((await call(ledger.url, 'GET', '/enrolments', { token: host.executor })).status).toBe(401);
  });
});
