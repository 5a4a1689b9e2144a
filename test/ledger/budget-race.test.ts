import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, mintCredential } from '../support/ledger.js';
import { startLedgerPair, type LedgerPair } from '../support/ledger-process.js';

/*
 * Budgets are decided in the hold's IMMEDIATE transaction (docs/ledger.md "Budgets"): requests in
 * flight at once, at two `lexec ledger serve` processes on one database file, never take any
 * budget past its limit — an agent's month, a target's cap, the installation's day — and fill the
 * installation's exactly. Checked with SQL on the shared file.
 */

const FLUX = 'lexec:target:v1:flux-schnell';
const SDXL = 'lexec:target:v1:sdxl';
const MICRO = 1_000_000n;

let pair: LedgerPair;
beforeAll(async () => {
  pair = await startLedgerPair();
}, 60_000);
afterAll(async () => {
  await pair.stop();
});

const admin = (method: string, path: string, body: unknown) => call(pair.ledger.url, method, path, { token: pair.adminToken, body });

async function agent(name: string, policy: Record<string, unknown>): Promise<{ agentId: string; token: string }> {
  const created = await admin('POST', '/agents', { name });
  const agentId = (created.body.agent as { agent_id: string }).agent_id;
  const set = await admin('PUT', `/agents/${agentId}/policy`, {
    per_authorization_cap_units: '5000000',
    daily_cap_units: '50000000',
    approval_threshold_units: '5000000',
    units_scale: 6,
    currency: 'USD',
    ...policy,
  });
  expect(set.status).toBe(200);
  return { agentId, token: await mintCredential({ url: pair.ledger.url, adminToken: pair.adminToken }, 'agent', agentId) };
}

describe('budgets under concurrent requests at two ledger processes', () => {
  it('holds exactly up to the installation budget and never past any budget', async () => {
    // The installation: 10 USD a day across all agents. Agent A: 6 USD a month, of which FLUX at most 4.
    expect((await admin('PUT', '/budgets/installation', { day_budget_units: (10n * MICRO).toString(), units_scale: 6, currency: 'USD' })).status).toBe(200);
    const a = await agent('budget-a', { month_budget_units: (6n * MICRO).toString(), targets: [{ target_id: FLUX, month_cap_units: (4n * MICRO).toString() }, { target_id: SDXL }] });
    const b = await agent('budget-b', {});
    const asks = [
      ...Array.from({ length: 6 }, () => ({ who: a, target: FLUX })),
      ...Array.from({ length: 6 }, () => ({ who: a, target: SDXL })),
      ...Array.from({ length: 12 }, () => ({ who: b, target: SDXL })),
    ];
    // All in flight at once, alternating between the two processes.
    const answers = await Promise.all(
      asks.map((ask, index) =>
        call<{ error?: { reason_code?: string; budget?: string } }>(index % 2 === 0 ? pair.ledger.url : pair.other.url, 'POST', '/authorizations', {
          token: ask.who.token,
          body: { amount_units: MICRO.toString(), units_scale: 6, currency: 'USD', target_id: ask.target },
        }),
      ),
    );
    for (const answer of answers) {
      if (answer.status !== 201) expect(answer).toMatchObject({ status: 422, body: { error: { code: 'policy_refused', reason_code: 'budget_exceeded' } } });
    }
    const held = answers.filter((answer) => answer.status === 201).length;
    const sum = (where: string, ...params: string[]) =>
      (pair.reader.prepare(`SELECT COUNT(*) AS n, COALESCE(SUM(amount_units), 0) AS units FROM authorizations WHERE status = 'approved' ${where}`).get(...params) as { n: number; units: number });
    // B alone could fill the day: the installation's budget is full, to the micro-unit, and no further.
    expect(held).toBe(10);
    expect(sum('')).toEqual({ n: 10, units: Number(10n * MICRO) });
    expect(sum('AND agent_id = ?', a.agentId).units).toBeLessThanOrEqual(Number(6n * MICRO));
    expect(sum('AND agent_id = ? AND target_id = ?', a.agentId, FLUX).units).toBeLessThanOrEqual(Number(4n * MICRO));
    // The installation's alerts, each once, though the holds that crossed them were decided at two processes.
    const alerts = pair.reader.prepare("SELECT json_extract(details, '$.percent') AS percent FROM events WHERE type = 'budget.threshold_crossed' AND json_extract(details, '$.budget') = 'installation.day' ORDER BY percent").all();
    expect(alerts).toEqual([{ percent: 50 }, { percent: 80 }, { percent: 100 }]);
  }, 60_000);
});
