import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLedgerClient } from '../../src/ledger/client/ledger-client.js';
import { errorOf, rawRequest, signIn as signInWith, startConsoleProcess, stopWithoutSecrets, type ConsoleProcess, type RawResponse } from '../support/console-process.js';
import { startRunningStack, type RunningStack } from '../support/running-stack.js';

/*
 * The console's policy editing over raw HTTP: the real `lexec stack console` child against a
 * real sandbox stack. A change from the page is made from the version the page showed, and
 * replaces only what the page edits — the rest of the agent's policy (alert percentages, the
 * target allow-list) is kept as the ledger has it. Then the Audit view of those changes.
 */

let stack: RunningStack;
let consoleProcess: ConsoleProcess;
const bodies: string[] = [];

async function signIn(): Promise<string> {
  return signInWith(consoleProcess.origin, await consoleProcess.newLogin());
}

async function send(method: string, path: string, options: { headers?: Record<string, string>; body?: unknown } = {}): Promise<RawResponse> {
  const response = await rawRequest(consoleProcess.origin, method, path, options);
  bodies.push(response.body);
  return response;
}

beforeAll(async () => {
  stack = await startRunningStack();
  consoleProcess = await startConsoleProcess(stack);
}, 180_000);

afterAll(async () => {
  await stopWithoutSecrets(stack, consoleProcess, bodies);
}, 120_000);

describe('lexec stack console: an agent\'s policy', () => {
  it('changes an agent\'s policy only from the version the page showed: a stale one is 412 with the current version, nothing changed (issue 27 item 4)', async () => {
    const session = await signIn();
    const headers = { 'x-lexec-session': session, origin: consoleProcess.origin };
    type AgentsAnswer = { agents: { agent_id: string; policy: { version: string; approval_threshold: { units: string }; per_authorization_cap: { units: string }; daily_cap: { units: string } } }[] };
    const agents = async () => JSON.parse((await send('GET', '/api/agents', { headers: { 'x-lexec-session': session } })).body) as AgentsAnswer;
    const [agent] = (await agents()).agents;
    const id = agent?.agent_id ?? '';
    const opened = agent?.policy.version ?? '';
    const policy = { per_authorization_cap_units: agent?.policy.per_authorization_cap.units ?? '', daily_cap_units: agent?.policy.daily_cap.units ?? '', approval_threshold_units: '900000' };

    const saved = await send('POST', `/api/agents/${id}/policy`, { headers, body: { ...policy, expect_version: opened } });
    expect(saved.status, saved.body).toBe(200);
    const next = String(BigInt(opened) + 1n);
    expect(JSON.parse(saved.body)).toMatchObject({ agent_id: id, policy: { version: next, approval_threshold: { units: '900000', display: '0.900000 USD' } } });

    // A second page still showing the version it opened: refused, with the version now; nothing changed.
    const stale = await send('POST', `/api/agents/${id}/policy`, { headers, body: { ...policy, approval_threshold_units: '100', expect_version: opened } });
    expect(stale.status).toBe(412);
    expect(JSON.parse(stale.body)).toEqual({ error: { code: 'policy_version_mismatch', reason_code: 'ledger_policy_version_mismatch', current_version: next } });
    expect((await agents()).agents[0]?.policy).toMatchObject({ version: next, approval_threshold: { units: '900000' } });

    // Bad input: field paths, nothing echoed, nothing changed.
    const bad = await send('POST', `/api/agents/${id}/policy`, { headers, body: { ...policy, daily_cap_units: '1.5', expect_version: 'latest' } });
    expect(bad.status).toBe(400);
    expect(errorOf(bad)).toMatchObject({ code: 'invalid_request', fields: ['daily_cap_units', 'expect_version'] });
    const unknown = await send('POST', '/api/agents/not-an-agent/policy', { headers, body: { ...policy, expect_version: next } });
    expect([unknown.status, errorOf(unknown).fields]).toEqual([400, ['agent_id']]);
    // The ledger's own rules: a per-authorization cap above the daily cap names its field.
    const rules = await send('POST', `/api/agents/${id}/policy`, { headers, body: { ...policy, per_authorization_cap_units: '999999999999', expect_version: next } });
    expect(rules.status, rules.body).toBe(400);
    expect(errorOf(rules).fields).toContain('per_authorization_cap_units');
    expect((await agents()).agents[0]?.policy.version).toBe(next);
    // Put back what the other tests expect.
    const back = await send('POST', `/api/agents/${id}/policy`, { headers, body: { ...policy, approval_threshold_units: agent?.policy.approval_threshold.units, expect_version: next } });
    expect(back.status, back.body).toBe(200);
  });

  it('a policy saved from the page keeps what the page does not edit (alert percentages, the target allow-list), and sets or clears its velocity limits and calendar budgets', async () => {
    const session = await signIn();
    const headers = { 'x-lexec-session': session, origin: consoleProcess.origin };
    const admin = createLedgerClient({ url: stack.ledgerUrl, token: await stack.capability('admin') });
    const id = stack.agentId;
    const before = await admin.policy(id);
    // Set from the CLI's side: every kind of limit a policy has.
    const limits = {
      max_requests_per_minute: 600n,
      max_requests_per_hour: 20_000n,
      suspend_after_velocity_refusals: 50n,
      day_budget_units: 90_000_000n,
      week_budget_units: 400_000_000n,
      month_budget_units: 1_500_000_000n,
      budget_alert_percentages: [25, 75],
      targets: [
        { target_id: 'lexec:target:v1:sandbox-image', month_cap_units: 800_000_000n },
        { target_id: 'lexec:target:v1:other-target', month_cap_units: null },
      ],
    };
    const full = await admin.setPolicy(id, {
      per_authorization_cap_units: before.per_authorization_cap_units,
      daily_cap_units: before.daily_cap_units,
      approval_threshold_units: before.approval_threshold_units,
      units_scale: 6,
      currency: 'USD',
      ...limits,
    });
    type AgentsAnswer = {
      agents: {
        agent_id: string;
        policy: {
          version: string;
          velocity: { max_requests_per_minute: string | null; max_requests_per_hour: string | null; suspend_after_velocity_refusals: string | null };
          budgets: { day: { units: string } | null; week: { units: string } | null; month: { units: string } | null; alert_percentages: number[] };
          targets: { target_id: string; month_cap: { units: string } | null }[] | null;
        };
        budgets: { name: string; limit: { units: string }; remaining: { units: string } }[];
        time_zone: string | null;
      }[];
    };
    const shown = async () => (JSON.parse((await send('GET', '/api/agents', { headers: { 'x-lexec-session': session } })).body) as AgentsAnswer).agents.find((agent) => agent.agent_id === id);
    // The page sees every limit, and each budget's standing in its period.
    const seen = await shown();
    expect(seen?.policy).toMatchObject({
      version: full.version.toString(),
      velocity: { max_requests_per_minute: '600', max_requests_per_hour: '20000', suspend_after_velocity_refusals: '50' },
      budgets: { day: { units: '90000000' }, week: { units: '400000000' }, month: { units: '1500000000' }, alert_percentages: [25, 75] },
      targets: [
        { target_id: 'lexec:target:v1:sandbox-image', month_cap: { units: '800000000' } },
        { target_id: 'lexec:target:v1:other-target', month_cap: null },
      ],
    });
    expect(seen?.budgets.map((budget) => budget.name)).toEqual(expect.arrayContaining(['agent.day', 'agent.week', 'agent.month', 'target:lexec:target:v1:sandbox-image']));
    expect(seen?.time_zone).toBe('UTC');

    // Only the approval threshold changed on the page (the body an older page sends): nothing else is lost.
    const caps = { per_authorization_cap_units: before.per_authorization_cap_units.toString(), daily_cap_units: before.daily_cap_units.toString() };
    const raised = await send('POST', `/api/agents/${id}/policy`, { headers, body: { ...caps, approval_threshold_units: '700000', expect_version: full.version.toString() } });
    expect(raised.status, raised.body).toBe(200);
    const kept = await admin.policy(id);
    expect(kept).toMatchObject({ version: full.version + 1n, approval_threshold_units: 700_000n, ...limits });

    // The page's velocity and budget fields: a value sets, an empty one clears; the rest is kept.
    const edited = await send('POST', `/api/agents/${id}/policy`, {
      headers,
      body: {
        ...caps,
        approval_threshold_units: before.approval_threshold_units.toString(),
        max_requests_per_minute: '',
        max_requests_per_hour: '',
        suspend_after_velocity_refusals: '',
        day_budget_units: '',
        week_budget_units: '300000000',
        month_budget_units: '',
        expect_version: kept.version.toString(),
      },
    });
    expect(edited.status, edited.body).toBe(200);
    const after = await admin.policy(id);
    expect(after).toMatchObject({
      version: kept.version + 1n,
      approval_threshold_units: before.approval_threshold_units,
      max_requests_per_minute: null,
      max_requests_per_hour: null,
      suspend_after_velocity_refusals: null,
      day_budget_units: null,
      week_budget_units: 300_000_000n,
      month_budget_units: null,
      budget_alert_percentages: limits.budget_alert_percentages,
      targets: limits.targets,
    });

    // Bad values name their fields; the ledger's own rules too; nothing changed.
    const bad = await send('POST', `/api/agents/${id}/policy`, { headers, body: { ...caps, approval_threshold_units: '1', week_budget_units: '-5', max_requests_per_hour: '1.5', expect_version: after.version.toString() } });
    expect([bad.status, errorOf(bad).fields]).toEqual([400, ['max_requests_per_hour', 'week_budget_units']]);
    const breaker = await send('POST', `/api/agents/${id}/policy`, { headers, body: { ...caps, approval_threshold_units: '1', suspend_after_velocity_refusals: '3', expect_version: after.version.toString() } });
    expect(breaker.status, breaker.body).toBe(400);
    expect(errorOf(breaker).fields).toContain('suspend_after_velocity_refusals');
    // A page that opened an older version changes nothing, whichever fields it sends.
    const stale = await send('POST', `/api/agents/${id}/policy`, { headers, body: { ...caps, approval_threshold_units: '1', month_budget_units: '5', expect_version: kept.version.toString() } });
    expect(stale.status).toBe(412);
    expect((await admin.policy(id)).version).toBe(after.version);

    // Put back what the other tests expect.
    await admin.setPolicy(id, { per_authorization_cap_units: before.per_authorization_cap_units, daily_cap_units: before.daily_cap_units, approval_threshold_units: before.approval_threshold_units, units_scale: 6, currency: 'USD' });
  });

  it('the installation budget: shown with its standing, set only from the version the page showed, cleared; bad input names its fields', async () => {
    const session = await signIn();
    const headers = { 'x-lexec-session': session, origin: consoleProcess.origin };
    const admin = createLedgerClient({ url: stack.ledgerUrl, token: await stack.capability('admin') });
    type Budget = { day: { units: string } | null; week: { units: string } | null; month: { units: string; display: string } | null; alert_percentages: number[]; time_zone: string; version: string; standing: { name: string }[] };
    type AgentsAnswer = { installation_budget: Budget; agents: { budgets: { name: string }[] }[] };
    const agents = async () => JSON.parse((await send('GET', '/api/agents', { headers: { 'x-lexec-session': session } })).body) as AgentsAnswer;
    const opened = (await agents()).installation_budget;
    expect(opened).toMatchObject({ day: null, week: null, month: null, alert_percentages: [50, 80, 100], time_zone: 'UTC', standing: [] });
    const none = { day_budget_units: '', week_budget_units: '', month_budget_units: '', alert_percentages: '' };

    const saved = await send('POST', '/api/installation-budget', { headers, body: { ...none, month_budget_units: '900000000', alert_percentages: ' 90, 25 ', expect_version: opened.version } });
    expect(saved.status, saved.body).toBe(200);
    const next = String(BigInt(opened.version) + 1n);
    expect((JSON.parse(saved.body) as { installation_budget: Budget }).installation_budget).toMatchObject({ day: null, month: { units: '900000000', display: '900.000000 USD' }, alert_percentages: [25, 90], version: next });
    expect((await admin.installationBudget()).budget).toMatchObject({ day_budget_units: null, week_budget_units: null, month_budget_units: 900_000_000n, alert_percentages: [25, 90], version: BigInt(next) });
    // Its standing, and in every agent's budgets too (a request of any agent counts against it).
    const shown = await agents();
    expect(shown.installation_budget.standing.map((budget) => budget.name)).toEqual(['installation.month']);
    for (const agent of shown.agents) expect(agent.budgets.map((budget) => budget.name)).toContain('installation.month');
    // The Overview shows it too.
    const overview = JSON.parse((await send('GET', '/api/overview', { headers: { 'x-lexec-session': session } })).body) as { installation_budget: Budget | null };
    expect(overview.installation_budget?.standing.map((budget) => budget.name)).toEqual(['installation.month']);
    expect(overview.installation_budget?.month).toMatchObject({ units: '900000000' });

    // A page still showing the version it opened changes nothing.
    const stale = await send('POST', '/api/installation-budget', { headers, body: { ...none, month_budget_units: '1', expect_version: opened.version } });
    expect(stale.status).toBe(412);
    expect(JSON.parse(stale.body)).toEqual({ error: { code: 'budget_version_mismatch', reason_code: 'ledger_budget_version_mismatch', current_version: next } });
    // Bad input: field paths, nothing echoed, nothing changed; the ledger's own rules too.
    const bad = await send('POST', '/api/installation-budget', { headers, body: { ...none, day_budget_units: '1.5', alert_percentages: '50; 80', expect_version: 'latest' } });
    expect([bad.status, errorOf(bad).fields]).toEqual([400, ['day_budget_units', 'alert_percentages', 'expect_version']]);
    expect(bad.body).not.toContain('50; 80');
    const missing = await send('POST', '/api/installation-budget', { headers, body: { month_budget_units: '5', expect_version: next } });
    expect([missing.status, errorOf(missing).fields]).toEqual([400, ['day_budget_units', 'week_budget_units', 'alert_percentages']]);
    const range = await send('POST', '/api/installation-budget', { headers, body: { ...none, month_budget_units: '5', alert_percentages: '50, 150', expect_version: next } });
    expect(range.status, range.body).toBe(400);
    expect(errorOf(range).fields?.every((field) => field.startsWith('alert_percentages'))).toBe(true);
    expect((await admin.installationBudget()).budget.version).toBe(BigInt(next));

    // Emptied: no installation budget, the default alert percentages.
    const cleared = await send('POST', '/api/installation-budget', { headers, body: { ...none, expect_version: next } });
    expect(cleared.status, cleared.body).toBe(200);
    expect((await admin.installationBudget()).budget).toMatchObject({ day_budget_units: null, week_budget_units: null, month_budget_units: null, alert_percentages: [50, 80, 100] });
    expect((await agents()).installation_budget.standing).toEqual([]);
    expect((JSON.parse((await send('GET', '/api/overview', { headers: { 'x-lexec-session': session } })).body) as { installation_budget: Budget | null }).installation_budget?.standing).toEqual([]);
  });

  it('the Audit view: the operator actions above, by the stack\'s admin credential, the agent by name; filters checked with field paths; no URL, path or capability (issue 27 item 6)', async () => {
    const session = await signIn();
    const read = (query = '') => send('GET', `/api/audit${query}`, { headers: { 'x-lexec-session': session } });
    type AuditAnswer = { events: Record<string, unknown>[]; next_after: string | null; agents: { agent_id: string; name: string }[] };
    const answer = await read();
    expect(answer.status, answer.body).toBe(200);
    const { events, agents } = JSON.parse(answer.body) as AuditAnswer;
    const [agent] = agents;
    const changes = events.filter((event) => event.action === 'policy_changed' && event.actor_kind === 'admin');
    expect(changes.length).toBeGreaterThanOrEqual(2);
    expect(changes[0]).toEqual({
      audit_id: expect.stringMatching(/^\d+$/) as unknown,
      at: expect.any(String) as unknown,
      actor_kind: 'admin',
      actor_credential_id: 'admin',
      actor_name: null,
      action: 'policy_changed',
      agent_id: agent?.agent_id,
      agent_name: agent?.name,
      subject_id: agent?.agent_id,
      change: expect.stringMatching(/^version \d+ → \d+; source \w+ → operator; .*approval_threshold_units [\d.]+ USD → 0\.900000 USD/) as unknown,
      reason: null,
    });
    // One agent's, from all time: the same events and more; a page of them continues with `after`.
    const all = JSON.parse((await read(`?period=all&agent_id=${agent?.agent_id ?? ''}`)).body) as AuditAnswer;
    expect(all.events.length).toBeGreaterThanOrEqual(changes.length);
    expect(all.events.every((event) => event.agent_id === agent?.agent_id)).toBe(true);
    const later = JSON.parse((await read(`?period=all&agent_id=${agent?.agent_id ?? ''}&after=${String(all.events.at(-1)?.audit_id)}`)).body) as AuditAnswer;
    expect(later.events).toEqual([]);
    // The installation budget's changes from the page: no agent, by the stack's admin credential.
    const budgetChanges = events.filter((event) => event.action === 'budget_changed');
    expect(budgetChanges.map((event) => [event.agent_id, event.actor_kind, event.subject_id])).toEqual([
      [null, 'admin', 'installation_budget'],
      [null, 'admin', 'installation_budget'],
    ]);
    expect(answer.body).not.toMatch(/https?:\/\/|\/state\/|\.db|\.capability|lexec_/);

    for (const [query, fields] of [
      ['?period=1y', ['period']],
      ['?agent_id=bot', ['agent_id']],
      ['?after=last', ['after']],
      ['?since=2026-01-01', ['since']],
    ] as const) {
      const bad = await read(query);
      expect([query, bad.status, errorOf(bad).fields]).toEqual([query, 400, fields]);
    }
    const unknown = await read(`?agent_id=agt_${randomUUID()}`);
    expect([unknown.status, errorOf(unknown)]).toEqual([404, { code: 'not_found', reason_code: 'ledger_not_found' }]);
    const shell = await send('GET', '/audit');
    expect([shell.status, shell.body]).toEqual([200, expect.stringContaining('<a href="/audit" aria-current="page">Audit</a>')]);
  });
});
