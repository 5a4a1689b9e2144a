import { describe, expect, it } from 'vitest';
import type { LedgerAuthorization } from '../../src/ledger/wire/answers.js';
import { call, ledgerPerTest, type Actors, type TestLedger } from '../support/ledger.js';

/*
 * Issue 28 item 4 at the ledger: when the agent reads its own authorization (`lexec run` polls
 * `GET /authorizations/{id}` while it waits for a human), the ledger records when, at most once
 * every few seconds per authorization, and shows it as `client_waiting.last_seen_at` — so an
 * approver can tell a request someone still waits on from one its client gave up on. An
 * approver's or admin's read records nothing. A real ledger app on a real SQLite file, its clock
 * moved by the test.
 */

let ledger: TestLedger;
let actors: Actors;

ledgerPerTest((started, its) => {
  ledger = started;
  actors = its;
});

type Shown = { authorization: LedgerAuthorization };

async function pending(): Promise<LedgerAuthorization> {
  const answer = await call<Shown>(ledger.url, 'POST', '/authorizations', { token: actors.agent, body: { amount_units: '2000000', units_scale: 6, currency: 'USD', purpose: 'a poster' } });
  expect(answer.body.authorization.status).toBe('requested');
  return answer.body.authorization;
}

const show = (tokenId: string, token: string) => call<Shown>(ledger.url, 'GET', `/authorizations/${tokenId}`, { token });
const seenAt = (tokenId: string) => ledger.query<{ client_seen_at: number | null }>('SELECT client_seen_at FROM authorizations WHERE token_id = ?', tokenId)[0]?.client_seen_at ?? null;

describe('a client waiting on its request', () => {
  it('is recorded when the agent reads its own authorization, at most once every 5 s, and shown to the approver', async () => {
    const authorization = await pending();
    expect(authorization.client_waiting).toBeNull();
    // The approver's and the admin's reads are not a client waiting.
    await show(authorization.token_id, actors.approver);
    await show(authorization.token_id, ledger.adminToken);
    expect(seenAt(authorization.token_id)).toBeNull();

    expect((await show(authorization.token_id, actors.agent)).status).toBe(200);
    const first = seenAt(authorization.token_id);
    expect(first).not.toBeNull();
    const byApprover = (await show(authorization.token_id, actors.approver)).body.authorization;
    expect(byApprover.client_waiting).toEqual({ last_seen_at: new Date(Number(first)).toISOString() });
    const approvals = await call<{ authorizations: LedgerAuthorization[] }>(ledger.url, 'GET', '/approvals', { token: actors.approver });
    expect(approvals.body.authorizations[0]?.client_waiting?.last_seen_at).toBe(byApprover.client_waiting?.last_seen_at);

    // Within 5 s another read writes nothing; after, it moves on.
    ledger.advance(2_000);
    await show(authorization.token_id, actors.agent);
    expect(seenAt(authorization.token_id)).toBe(first);
    ledger.advance(4_000);
    await show(authorization.token_id, actors.agent);
    expect(Number(seenAt(authorization.token_id))).toBeGreaterThanOrEqual(Number(first) + 6_000);
  });

});
