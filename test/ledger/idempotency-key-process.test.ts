import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { setUpActors } from '../support/ledger.js';
import { startLedgerPair, type LedgerPair } from '../support/ledger-process.js';

/*
 * Issue 27 item 5's race on real `lexec ledger serve` processes: concurrent requests with one
 * Idempotency-Key, sent to two ledger processes on one database, open exactly one authorization
 * and one hold — the lookup and the insert are one IMMEDIATE transaction, and the store's partial
 * UNIQUE index allows one open authorization per agent and key.
 */

let pair: LedgerPair;

beforeAll(async () => {
  pair = await startLedgerPair();
}, 60_000);

afterAll(async () => {
  await pair.stop();
});

describe('Idempotency-Key on real ledger processes', () => {
  it('20 concurrent requests with one key, across two processes on one database: one authorization, one hold, 1 x 201 and 19 replays naming it', async () => {
    const { ledger, other, adminToken, reader } = pair;
    const actors = await setUpActors({ url: ledger.url, adminToken }, 'racer');
    const request = (url: string) =>
      fetch(`${url}/authorizations`, {
        method: 'POST',
        headers: { authorization: `Bearer ${actors.agent}`, 'content-type': 'application/json', 'idempotency-key': 'one-job' },
        body: JSON.stringify({ amount_units: '2000000', units_scale: 6, currency: 'USD', purpose: 'one job' }),
      }).then(async (response) => ({ status: response.status, replayed: response.headers.get('idempotent-replayed'), body: (await response.json()) as { authorization: { token_id: string } } }));
    const answers = await Promise.all(Array.from({ length: 20 }, (_, index) => request(index % 2 === 0 ? ledger.url : other.url)));
    expect(answers.map((answer) => answer.status).sort()).toEqual([...Array<number>(19).fill(200), 201]);
    expect(answers.filter((answer) => answer.replayed === 'true')).toHaveLength(19);
    expect(new Set(answers.map((answer) => answer.body.authorization.token_id)).size).toBe(1);
    expect(reader.prepare('SELECT status, amount_units, idempotency_key FROM authorizations WHERE agent_id = ?').all(actors.agentId)).toEqual([
      { status: 'requested', amount_units: 2000000, idempotency_key: 'one-job' },
    ]);
    const spending = await fetch(`${ledger.url}/agent/spending`, { headers: { authorization: `Bearer ${actors.agent}` } });
    expect(((await spending.json()) as { spending: { held_units: string } }).spending.held_units).toBe('2000000');
  });
});
