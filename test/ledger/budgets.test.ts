import { describe, expect, it } from 'vitest';
import type { LedgerAuthorization, LedgerEvent, LedgerInstallationBudgetAnswer, LedgerPolicy, LedgerSpending } from '../../src/ledger/wire/answers.js';
import { LedgerPolicyRefused, ledgerResponseError } from '../../src/ledger/client/ledger-client-errors.js';
import { errorBodySchema } from '../../src/ledger/wire/answers.js';
import { policyRefusalReason } from '../../src/stack-client/paid-job/policy-room.js';
import { call, DEFAULT_POLICY, ledgerPerTest, mintCredential, setUpActors, type Actors, type TestLedger } from '../support/ledger.js';

/*
 * Issue 28 item 1, budgets: calendar budgets per agent (day, ISO week, month of the installation's
 * time zone), an allow-list of targets with a cap per calendar month each, and an installation-wide
 * budget — all decided in the hold's transaction, explained in every refusal, shown by the
 * spending answers, and each alert percentage crossed written once as a `budget.threshold_crossed`
 * event. A real ledger app on a real SQLite file, with a fake clock in Europe/Berlin.
 */

type ErrorAnswer = { error: Record<string, string> & { code: string; reason_code?: string; fields?: string[] } };

const FLUX = 'lexec:target:v1:flux-schnell';
const SDXL = 'lexec:target:v1:sdxl';
// Friday 30 October 2026, 12:00 in Berlin (winter time, UTC+1, since the 25th).
const START = Date.parse('2026-10-30T11:00:00Z');
const HOUR = 3_600_000;

let ledger: TestLedger;
let actors: Actors;

ledgerPerTest(
  (started, its) => {
    ledger = started;
    actors = its;
  },
  // Holds live a week, so a test's holds stay held across the days it crosses.
  { timeZone: 'Europe/Berlin', startAt: START, ttlSeconds: 604_800 },
);

const policyBody = (extra: Record<string, unknown>) => ({
  per_authorization_cap_units: DEFAULT_POLICY.per_authorization_cap_units.toString(),
  daily_cap_units: '100000000',
  approval_threshold_units: '100000000',
  units_scale: 6,
  currency: 'USD',
  ...extra,
});

async function setPolicy(extra: Record<string, unknown>, agentId = actors.agentId) {
  const answer = await call<{ policy: LedgerPolicy } & ErrorAnswer>(ledger.url, 'PUT', `/agents/${agentId}/policy`, { token: ledger.adminToken, body: policyBody(extra) });
  return answer;
}

function request(amountUnits: string, extra: Record<string, unknown> = {}, token = actors.agent) {
  return call<{ authorization: LedgerAuthorization } & ErrorAnswer>(ledger.url, 'POST', '/authorizations', {
    token,
    body: { amount_units: amountUnits, units_scale: 6, currency: 'USD', ...extra },
  });
}

async function held(amountUnits: string, extra: Record<string, unknown> = {}, token = actors.agent): Promise<LedgerAuthorization> {
  const answer = await request(amountUnits, extra, token);
  expect(answer.status, JSON.stringify(answer.body)).toBe(201);
  return answer.body.authorization;
}

const spending = async () => (await call<{ spending: LedgerSpending }>(ledger.url, 'GET', '/agent/spending', { token: actors.agent })).body.spending;
const thresholdEvents = async () =>
  (await call<{ events: LedgerEvent[] }>(ledger.url, 'GET', '/events?types=budget.threshold_crossed', { token: ledger.adminToken })).body.events.map((event) => event.details);

describe('calendar budgets of an agent', () => {
  it('refuses a request that would pass the month budget, naming the budget, its period, limit and what remains', async () => {
    expect((await setPolicy({ month_budget_units: '3000000' })).status).toBe(200);
    await held('2000000');
    const refused = await request('1500000');
    expect(refused.status).toBe(422);
    expect(refused.body.error).toMatchObject({
      code: 'policy_refused',
      reason_code: 'budget_exceeded',
      budget: 'agent.month',
      period: 'month',
      period_start: '2026-09-30T22:00:00.000Z',
      period_end: '2026-10-31T23:00:00.000Z',
      limit_units: '3000000',
      committed_units: '2000000',
      remaining_units: '1000000',
      requested_units: '1500000',
    });
    // The clients' words (lexec run, the agent): which budget refused, and what remains.
    const mapped = ledgerResponseError(422, errorBodySchema.parse(refused.body).error, { url: ledger.url, needs: ['agent'], presented: 'agent', subject: 'authorization' });
    expect(mapped).toBeInstanceOf(LedgerPolicyRefused);
    expect(mapped.message).toContain('agent.month');
    expect(mapped.message).toContain('1000000 micro-units remain');
    expect(policyRefusalReason(mapped)).toEqual({
      reason: 'budget_exceeded',
      budget: { budget: 'agent.month', period: 'month', period_end: '2026-10-31T23:00:00.000Z', limit_units: 3_000_000n, committed_units: 2_000_000n, remaining_units: 1_000_000n },
    });
    // What remains is still there to take, to the micro-unit.
    await held('1000000');
    expect((await request('1')).status).toBe(422);
  });

  it('starts a fresh day, week and month at local midnight, across the Berlin month boundary', async () => {
    await setPolicy({ day_budget_units: '1500000', week_budget_units: '2200000', month_budget_units: '3000000' });
    await held('1000000');
    expect((await request('600000')).body.error).toMatchObject({ budget: 'agent.day', remaining_units: '500000' });
    // Saturday 31 October, 23:30 Berlin: a new day, the same week and month.
    ledger.advance(Date.parse('2026-10-31T22:30:00Z') - START);
    await held('1000000');
    expect((await request('300000')).body.error).toMatchObject({ budget: 'agent.week', remaining_units: '200000', period_start: '2026-10-25T23:00:00.000Z' });
    await held('200000');
    // Sunday 1 November, 00:30 Berlin (23:30 UTC the day before): a new day and month, the same ISO week.
    ledger.advance(HOUR);
    expect((await request('1')).body.error).toMatchObject({ budget: 'agent.week', remaining_units: '0', period_end: '2026-11-01T23:00:00.000Z' });
    // Monday 2 November, 00:00 Berlin: a new week too.
    ledger.advance(Date.parse('2026-11-01T23:00:00Z') - Date.parse('2026-10-31T23:30:00Z'));
    await held('1000000');
    const standing = await spending();
    expect(standing.time_zone).toBe('Europe/Berlin');
    expect(standing.budgets.map((budget) => [budget.name, budget.period_start, budget.held_units, budget.remaining_units])).toEqual([
      ['agent.day', '2026-11-01T23:00:00.000Z', '1000000', '500000'],
      ['agent.week', '2026-11-01T23:00:00.000Z', '1000000', '1200000'],
      ['agent.month', '2026-10-31T23:00:00.000Z', '1000000', '2000000'],
    ]);
  });

  it('counts settled amounts, not holds, once settled, and frees a released hold', async () => {
    await setPolicy({ month_budget_units: '5000000' });
    const first = await held('3000000', { target_id: FLUX });
    const claim = await call(ledger.url, 'POST', `/executor/authorizations/${first.token_id}/claim`, {
      token: actors.executor,
      body: { execution_id: 'exe_1', require: { currency: 'USD', min_held_units: '0', target_id: FLUX } },
    });
    expect(claim.status).toBe(200);
    const { preciseReceipt } = await import('../support/ledger.js');
    expect((await call(ledger.url, 'POST', `/executor/authorizations/${first.token_id}/settle`, { token: actors.executor, body: { execution_id: 'exe_1', receipt: preciseReceipt(1_200_000n) } })).status).toBe(200);
    const month = (await spending()).budgets.find((budget) => budget.name === 'agent.month');
    expect(month).toMatchObject({ spent_units: '1200000', held_units: '0', remaining_units: '3800000' });
    await held('3800000');
  });
});

describe('the target allow-list', () => {
  it('refuses a request naming no target (target_required) or another target (target_not_allowed), and caps each target per month', async () => {
    await setPolicy({ targets: [{ target_id: FLUX, month_cap_units: '2000000' }, { target_id: SDXL }] });
    expect((await request('1000')).body.error).toMatchObject({ code: 'policy_refused', reason_code: 'target_required', fields: ['target_id'] });
    expect((await request('1000', { target_id: 'lexec:target:v1:other' })).body.error).toMatchObject({ reason_code: 'target_not_allowed', fields: ['target_id'] });
    await held('1500000', { target_id: FLUX });
    expect((await request('600000', { target_id: FLUX })).body.error).toMatchObject({ budget: `target:${FLUX}`, period: 'month', remaining_units: '500000' });
    // SDXL has no cap of its own.
    await held('4000000', { target_id: SDXL });
    const policy = (await call<{ policy: LedgerPolicy }>(ledger.url, 'GET', `/agents/${actors.agentId}/policy`, { token: ledger.adminToken })).body.policy;
    expect(policy.targets).toEqual([
      { target_id: FLUX, month_cap_units: '2000000' },
      { target_id: SDXL, month_cap_units: null },
    ]);
  });

  it('keeps the budgets and the allow-list when a change leaves them out (an older client), and drops them when set to null', async () => {
    await setPolicy({ month_budget_units: '7000000', targets: [{ target_id: FLUX }] });
    const kept = await setPolicy({});
    expect(kept.body.policy).toMatchObject({ month_budget_units: '7000000', targets: [{ target_id: FLUX, month_cap_units: null }], budget_alert_percentages: [50, 80, 100] });
    const dropped = await setPolicy({ month_budget_units: null, targets: null });
    expect(dropped.body.policy).toMatchObject({ month_budget_units: null, targets: null });
    await held('1000');
  });
});

describe('the claim binds the target', () => {
  it("claims an authorization that names a target only for that target: another target's execution cannot spend it", async () => {
    await setPolicy({ targets: [{ target_id: FLUX, month_cap_units: '1000000' }, { target_id: SDXL }] });
    const authorization = await held('900000', { target_id: FLUX });
    const claim = (requirement: Record<string, unknown> | undefined) =>
      call<ErrorAnswer>(ledger.url, 'POST', `/executor/authorizations/${authorization.token_id}/claim`, {
        token: actors.executor,
        body: { execution_id: 'exe_x', ...(requirement === undefined ? {} : { require: requirement }) },
      });
    for (const requirement of [undefined, { currency: 'USD', min_held_units: '1' }, { currency: 'USD', min_held_units: '1', target_id: SDXL }]) {
      const refused = await claim(requirement);
      expect(refused.status).toBe(422);
      expect(refused.body.error).toMatchObject({ code: 'requirement_not_met', reason_code: 'target_mismatch', fields: ['require.target_id'] });
    }
    expect(ledger.query<{ status: string }>('SELECT status FROM authorizations WHERE token_id = ?', authorization.token_id)).toEqual([{ status: 'approved' }]);
    expect((await claim({ currency: 'USD', min_held_units: '1', target_id: FLUX })).status).toBe(200);
  });
});

describe('the installation budget', () => {
  const installation = (token = ledger.adminToken) => call<LedgerInstallationBudgetAnswer & ErrorAnswer>(ledger.url, 'GET', '/budgets/installation', { token });
  const setInstallation = (body: Record<string, unknown>, version?: string) =>
    call<LedgerInstallationBudgetAnswer & ErrorAnswer>(ledger.url, 'PUT', '/budgets/installation', {
      token: ledger.adminToken,
      body: { units_scale: 6, currency: 'USD', ...body },
      ...(version === undefined ? {} : { headers: { 'if-match': version } }),
    });

  it('limits all agents together, versioned like a policy, and is audited', async () => {
    const first = await installation();
    expect(first.body.budget).toMatchObject({ day_budget_units: null, alert_percentages: [50, 80, 100], time_zone: 'Europe/Berlin', version: '1' });
    expect((await setInstallation({ day_budget_units: '3000000', alert_percentages: [90] }, '1')).status).toBe(200);
    const stale = await setInstallation({ day_budget_units: '1' }, '1');
    expect(stale.status).toBe(412);
    expect(stale.body.error).toMatchObject({ code: 'budget_version_mismatch', current_version: '2' });
    const other = await setUpActors(ledger, 'other-bot');
    await held('2000000');
    await held('500000', {}, other.agent);
    const refused = await request('600000', {}, other.agent);
    expect(refused.body.error).toMatchObject({ budget: 'installation.day', limit_units: '3000000', committed_units: '2500000', remaining_units: '500000' });
    const shown = await installation();
    expect(shown.body.standing).toEqual([expect.objectContaining({ name: 'installation.day', held_units: '2500000', remaining_units: '500000' })]);
    expect((await spending()).budgets.map((budget) => budget.name)).toEqual(['installation.day']);
    const audit = ledger.query<{ action: string; after: string }>("SELECT action, after FROM audit_events WHERE subject_id = 'installation_budget'");
    expect(audit.map((event) => event.action)).toEqual(['budget_changed']);
    expect(JSON.parse(audit[0]?.after ?? '{}')).toMatchObject({ version: '2', day_budget_units: '3000000', alert_percentages: '90' });
    // Only the admin reads it.
    expect((await installation(actors.agent)).status).toBe(401);
  });

  it('refuses bad input with field paths: a percentage outside 1-100, a repeated one, a negative amount', async () => {
    const bad = await setInstallation({ alert_percentages: [0, 50, 50, 101], week_budget_units: '-1' });
    expect(bad.status).toBe(400);
    expect(bad.body.error.fields?.sort()).toEqual(['alert_percentages[0]', 'alert_percentages[2]', 'alert_percentages[3]', 'week_budget_units'].sort());
  });
});

describe('budget alerts', () => {
  it('writes one budget.threshold_crossed event per budget, period and percentage, in the hold that reaches it', async () => {
    await setPolicy({ month_budget_units: '10000000', budget_alert_percentages: [80, 50] });
    await held('4000000');
    expect(await thresholdEvents()).toEqual([]);
    // 4 → 8.5 of 10: crosses 50 and 80 at once.
    const crossing = await held('4500000');
    const events = await thresholdEvents();
    expect(events).toEqual([
      { budget: 'agent.month', scope: 'agent', period: 'month', period_start: '2026-09-30T22:00:00.000Z', percent: 50, limit_units: '10000000', committed_units: '8500000' },
      { budget: 'agent.month', scope: 'agent', period: 'month', period_start: '2026-09-30T22:00:00.000Z', percent: 80, limit_units: '10000000', committed_units: '8500000' },
    ]);
    const all = (await call<{ events: LedgerEvent[] }>(ledger.url, 'GET', '/events?types=budget.threshold_crossed', { token: ledger.adminToken })).body.events;
    expect(all.map((event) => [event.agent_id, event.authorization_id])).toEqual([
      [actors.agentId, crossing.token_id],
      [actors.agentId, crossing.token_id],
    ]);
    // Released and taken again: the same percentages in the same period never alert twice.
    const execution = { token: actors.executor, body: { execution_id: 'exe_r', require: { currency: 'USD', min_held_units: '0' } } };
    expect((await call(ledger.url, 'POST', `/executor/authorizations/${crossing.token_id}/claim`, execution)).status).toBe(200);
    expect((await call(ledger.url, 'POST', `/executor/authorizations/${crossing.token_id}/release`, { token: actors.executor, body: { execution_id: 'exe_r', reason: 'not_transmitted' } })).status).toBe(200);
    await held('4500000');
    expect(await thresholdEvents()).toHaveLength(2);
    // A new month (1 November, 01:00 Berlin): the same percentages alert again, for the new period.
    ledger.advance(Date.parse('2026-11-01T00:00:00Z') - START);
    await held('5000000');
    expect((await thresholdEvents()).map((details) => [details.period_start, details.percent])).toEqual([
      ['2026-09-30T22:00:00.000Z', 50],
      ['2026-09-30T22:00:00.000Z', 80],
      ['2026-10-31T23:00:00.000Z', 50],
    ]);
  });

  it('refuses a policy whose percentages or targets are malformed, with their field paths', async () => {
    const bad = await setPolicy({ budget_alert_percentages: [50, 150], targets: [{ target_id: 'flux' }, { target_id: FLUX, month_cap_units: '0' }], day_budget_units: '0' });
    expect(bad.status).toBe(400);
    expect(bad.body.error.fields?.sort()).toEqual(['budget_alert_percentages[1]', 'day_budget_units', 'targets[0].target_id', 'targets[1].month_cap_units'].sort());
  });
});

describe('who may set the installation budget', () => {
  it('refuses an approver', async () => {
    const approver = await mintCredential(ledger, 'approver');
    expect((await call(ledger.url, 'PUT', '/budgets/installation', { token: approver, body: { units_scale: 6, currency: 'USD' } })).status).toBe(401);
  });
});
