import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { LedgerSpendReport } from '../../src/ledger/wire/answers.js';
import { call, claimBody, ledgerPerTest, mintCredential, preciseReceipt, type Actors, type TestLedger } from '../support/ledger.js';

/*
 * Issue 28 item 5 at the ledger: `GET /reports/spend` sums the settlement rows per agent, target
 * or calendar period, and apart what is held now; admin and approver credentials may read it; bad
 * queries are refused with their field paths. A real ledger app on a real SQLite file.
 */

type Answer = { report: LedgerSpendReport & { groups: Record<string, unknown>[]; total: Record<string, unknown> } } & { error?: { code: string; fields?: string[] } };

let ledger: TestLedger;
let actors: Actors;

ledgerPerTest((started, its) => {
  ledger = started;
  actors = its;
});

/** A spend request naming the executor target it pays for, if any. */
async function request(amountUnits: string, agentToken = actors.agent, targetId: string | null = null): Promise<string> {
  const answer = await call<{ authorization: { token_id: string } }>(ledger.url, 'POST', '/authorizations', {
    token: agentToken,
    body: { amount_units: amountUnits, units_scale: 6, currency: 'USD', ...(targetId === null ? {} : { target_id: targetId }) },
  });
  expect(answer.status).toBe(201);
  return answer.body.authorization.token_id;
}

async function claim(tokenId: string): Promise<string> {
  const executionId = `exe_${randomUUID().replaceAll('-', '')}`;
  const claimed = await call(ledger.url, 'POST', `/executor/authorizations/${tokenId}/claim`, { token: actors.executor, body: claimBody(ledger, tokenId, executionId) });
  expect(claimed.status).toBe(200);
  return executionId;
}

async function settle(tokenId: string, amountUnits: string): Promise<void> {
  const executionId = await claim(tokenId);
  const settled = await call(ledger.url, 'POST', `/executor/authorizations/${tokenId}/settle`, { token: actors.executor, body: { execution_id: executionId, receipt: preciseReceipt(amountUnits) } });
  expect(settled.status).toBe(200);
}

const report = (query: string, token = ledger.adminToken) => call<Answer>(ledger.url, 'GET', `/reports/spend${query}`, { token });

describe('GET /reports/spend', () => {
  it('sums settled amounts per agent and per target, holds apart, with exact digit strings', async () => {
    const other = await call<{ agent: { agent_id: string } }>(ledger.url, 'POST', '/agents', { token: ledger.adminToken, body: { name: 'other' } });
    const otherToken = await mintCredential(ledger, 'agent', other.body.agent.agent_id);
    const first = await request('900000', actors.agent, 'lexec:target:v1:flux-schnell');
    const second = await request('800000', actors.agent, 'lexec:target:v1:flux-dev');
    const third = await request('700000', otherToken, 'lexec:target:v1:flux-schnell');
    await request('600000', actors.agent, 'lexec:target:v1:flux-dev'); // approved, unclaimed: held
    const claimed = await request('500000', otherToken); // no target; claimed: held
    const released = await request('400000', actors.agent, 'lexec:target:v1:flux-dev');
    await settle(first, '899999');
    await settle(second, '800000');
    await settle(third, '123456');
    await claim(claimed);
    const releasedExecution = await claim(released);
    expect((await call(ledger.url, 'POST', `/executor/authorizations/${released}/release`, { token: actors.executor, body: { execution_id: releasedExecution, reason: 'not_transmitted' } })).status).toBe(200);

    const byAgent = await report('?by=agent');
    expect(byAgent.status).toBe(200);
    expect(byAgent.body.report).toMatchObject({ by: 'agent', time_zone: 'UTC', since: null, until: null, units_scale: 6, currency: 'USD' });
    const bot = { group: actors.agentId, label: 'bot', settled_units: '1699999', settled_count: 2, held_units: '600000', held_count: 1 };
    const otherGroup = { group: other.body.agent.agent_id, label: 'other', settled_units: '123456', settled_count: 1, held_units: '500000', held_count: 1 };
    expect(byAgent.body.report.groups).toEqual([bot, otherGroup].sort((a, b) => (a.group < b.group ? -1 : 1)));
    expect(byAgent.body.report.total).toEqual({ settled_units: '1823455', settled_count: 3, held_units: '1100000', held_count: 2 });

    const byTarget = await report('?by=target', actors.approver);
    expect(byTarget.status).toBe(200);
    expect(byTarget.body.report.groups).toEqual([
      { group: '(none)', label: '(none)', settled_units: '0', settled_count: 0, held_units: '500000', held_count: 1 },
      { group: 'lexec:target:v1:flux-dev', label: 'lexec:target:v1:flux-dev', settled_units: '800000', settled_count: 1, held_units: '600000', held_count: 1 },
      { group: 'lexec:target:v1:flux-schnell', label: 'lexec:target:v1:flux-schnell', settled_units: '1023455', settled_count: 2, held_units: '0', held_count: 0 },
    ]);

    const today = new Date().toISOString().slice(0, 10);
    const byDay = await report('?by=day&split=target');
    expect(byDay.body.report.groups.map((group) => group.group)).toEqual([today]);
    // Split per target (the console's chart series): each part as its own group above.
    expect(byDay.body.report.groups[0]?.parts).toEqual(byTarget.body.report.groups.map(({ group, ...rest }) => ({ part: group, ...rest })));
    expect((await report('?by=day')).body.report.groups[0]).not.toHaveProperty('parts');
    // A range that ends before today holds nothing.
    const before = await report('?by=month&since=2020-01-01&until=2020-02-01T00:00:00Z');
    expect(before.body.report).toMatchObject({ since: '2020-01-01T00:00:00.000Z', until: '2020-02-01T00:00:00.000Z', groups: [] });
    expect(before.body.report.total).toEqual({ settled_units: '0', settled_count: 0, held_units: '0', held_count: 0 });
  });

  it('counts a settlement by when it was settled, and an authorization held past its expiry no more', async () => {
    const early = await request('300000');
    const late = await request('200000');
    await settle(early, '300000');
    const cut = new Date(Date.now() + 60_000).toISOString();
    ledger.advance(120_000);
    await settle(late, '200000');
    const open = await request('100000');
    expect((await report(`?by=agent&until=${cut}`)).body.report.total).toMatchObject({ settled_units: '300000', held_units: '0' });
    expect((await report(`?by=agent&since=${cut}`)).body.report.total).toMatchObject({ settled_units: '200000', held_units: '100000' });
    ledger.advance(2 * 3_600_000); // past the hold's TTL (1 h)
    expect((await report('?by=agent')).body.report.total).toEqual({ settled_units: '500000', settled_count: 2, held_units: '0', held_count: 0 });
    expect(open).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('refuses an agent credential, and a call without one', async () => {
    expect((await report('?by=agent', actors.agent)).status).toBe(401);
    expect((await call(ledger.url, 'GET', '/reports/spend?by=agent')).status).toBe(401);
  });

  it('refuses a bad query with its field path', async () => {
    const refused = async (query: string) => {
      const answer = await report(query);
      expect(answer.status).toBe(400);
      expect(answer.body.error?.code).toBe('invalid_request');
      return answer.body.error?.fields;
    };
    expect(await refused('')).toEqual(['by']);
    expect(await refused('?by=year')).toEqual(['by']);
    expect(await refused('?by=day&since=2026-02-30')).toEqual(['since']);
    expect(await refused('?by=day&until=yesterday')).toEqual(['until']);
    expect(await refused('?by=day&since=2026-11-01T00:00:00')).toEqual(['since']); // no offset
    expect(await refused('?by=day&since=2026-12-01&until=2026-11-01')).toEqual(['until']);
    expect(await refused('?by=day&since=2026-11-01&until=2026-11-01T00:00:00Z')).toEqual(['until']);
    expect(await refused('?by=day&agent=bot')).toEqual(['agent']);
    expect(await refused('?by=day&split=day')).toEqual(['split']);
  });
});
