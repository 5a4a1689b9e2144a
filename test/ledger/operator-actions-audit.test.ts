import { randomBytes } from 'node:crypto';
import { chmod, mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { LedgerAuditEvent, LedgerAuditPage, LedgerWebhookSink } from '../../src/ledger/wire/answers.js';
import { eventually } from '../support/stack-home.js';
import { call, ledgerPerTest, type Actors, type TestLedger } from '../support/ledger.js';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver.js';

/*
 * Issue 28's operator actions in the audit trail (ledger migration 14; docs/ledger.md "Audit
 * trail"): adding a webhook sink (`webhook_added`), removing it (`webhook_removed`, with how many
 * pending deliveries the removal failed) and changing the installation budget (`budget_changed`)
 * each record one event, by the admin credential, at the change's own time, with the state before
 * and after. A repeat or refused change records nothing. `GET /audit` never shows a sink URL's
 * path (it may be a secret, as a Slack webhook's is) nor its secret file's content.
 * A real ledger app on a real SQLite file and a real loopback receiver.
 */

let ledger: TestLedger;
let actors: Actors;
ledgerPerTest((started, its) => {
  ledger = started;
  actors = its;
});

const receivers: WebhookReceiver[] = [];
afterEach(async () => {
  await Promise.all(receivers.splice(0).map((receiver) => receiver.close()));
});

const SECRET_PATH_PART = 'T0SECRET/B0SECRET/xoxsecretpathpart';
const admin = { actor_kind: 'admin', actor_credential_id: 'admin' };

async function secretFile(): Promise<{ path: string; secret: string }> {
  const dir = join(ledger.dir, 'secrets');
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const path = join(dir, 'hook.secret');
  const secret = randomBytes(32).toString('hex');
  await writeFile(path, `${secret}\n`, { mode: 0o600 });
  await chmod(path, 0o600);
  return { path, secret };
}

const audit = () => call<LedgerAuditPage>(ledger.url, 'GET', '/audit?limit=500', { token: ledger.adminToken });
/** The audit events of issue 28's actions, oldest first. */
const actionsOf = async (...actions: string[]): Promise<LedgerAuditEvent[]> => (await audit()).body.events.filter((event) => actions.includes(event.action));
const addSink = (body: Record<string, unknown>) => call<{ sink: LedgerWebhookSink; error?: { code: string } }>(ledger.url, 'POST', '/webhooks', { token: ledger.adminToken, body });
const removeSink = (sinkId: string) => call<{ changed: boolean; sink: LedgerWebhookSink }>(ledger.url, 'POST', `/webhooks/${sinkId}/remove`, { token: ledger.adminToken, body: {} });
const msOf = (iso: string | null) => (iso === null ? null : Date.parse(iso));

async function requestAuthorization(): Promise<void> {
  const answer = await call(ledger.url, 'POST', '/authorizations', { token: actors.agent, body: { amount_units: '500000', units_scale: 6, currency: 'USD', purpose: 'a poster' } });
  expect(answer.status).toBe(201);
}

describe('webhook sinks in the audit trail', () => {
  it('adding a sink records webhook_added once: its origin, format, events and secret file path — never the URL path or the secret', async () => {
    const hook = await startWebhookReceiver(200);
    receivers.push(hook);
    const { path, secret } = await secretFile();
    const refused = await addSink({ url: `${hook.origin}/${SECRET_PATH_PART}`, secret_file: join(ledger.dir, 'secrets', 'absent.secret') });
    expect(refused.status).toBe(400);
    expect(await actionsOf('webhook_added')).toEqual([]);

    const added = await addSink({ url: `${hook.origin}/${SECRET_PATH_PART}?token=${SECRET_PATH_PART}`, secret_file: path, events: ['authorization.requested', 'authorization.settled'], format: 'slack' });
    expect(added.status).toBe(201);
    const { sink } = added.body;
    const events = await actionsOf('webhook_added', 'webhook_removed');
    expect(events).toEqual([
      expect.objectContaining({
        ...admin,
        action: 'webhook_added',
        agent_id: null,
        subject_id: sink.sink_id,
        before: null,
        after: { status: 'active', url_origin: hook.origin, format: 'slack', events: 'authorization.requested,authorization.settled', secret_file: path, cursor_event_id: sink.cursor_event_id },
        reason: null,
      }),
    ]);
    // At the change's own time: the sink's created_at.
    expect(msOf(events[0]?.at ?? null)).toBe(msOf(sink.created_at));

    const all = await addSink({ url: `${hook.origin}/`, secret_file: path });
    expect((await actionsOf('webhook_added')).map((event) => [event.subject_id, event.after?.events, event.after?.format])).toEqual([
      [sink.sink_id, 'authorization.requested,authorization.settled', 'slack'],
      [all.body.sink.sink_id, 'all', 'lexec'],
    ]);

    const shown = JSON.stringify((await audit()).body);
    expect(shown).not.toContain('T0SECRET');
    expect(shown).not.toContain('xoxsecretpathpart');
    expect(shown).not.toContain(secret);
    const stored = JSON.stringify(ledger.query('SELECT subject_id, before, after, reason FROM audit_events'));
    expect(stored).not.toContain('T0SECRET');
    expect(stored).not.toContain(secret);
  });

  it('removing a sink records webhook_removed once, with the pending deliveries it failed; a repeat or an unknown sink records nothing', async () => {
    // A receiver that never answers: the deliveries stay pending until the removal fails them.
    const hook = await startWebhookReceiver('hang');
    receivers.push(hook);
    const { path } = await secretFile();
    const { sink } = (await addSink({ url: `${hook.origin}/${SECRET_PATH_PART}`, secret_file: path, events: ['authorization.requested'] })).body;
    await requestAuthorization();
    await requestAuthorization();
    await eventually(
      'both deliveries taken up',
      () => (ledger.query<{ n: bigint }>("SELECT COUNT(*) AS n FROM webhook_deliveries WHERE sink_id = ? AND status = 'pending'", sink.sink_id)[0]?.n === 2n ? true : undefined),
      10_000,
      20,
    );

    const removed = await removeSink(sink.sink_id);
    expect([removed.status, removed.body.changed]).toEqual([200, true]);
    const removals = await actionsOf('webhook_removed');
    expect(removals).toEqual([
      expect.objectContaining({ ...admin, agent_id: null, subject_id: sink.sink_id, before: { status: 'active' }, after: { status: 'removed', failed_deliveries: 2 }, reason: null }),
    ]);
    expect(msOf(removals[0]?.at ?? null)).toBe(msOf(removed.body.sink.removed_at));

    expect((await removeSink(sink.sink_id)).body.changed).toBe(false);
    expect((await removeSink('whk_00000000-0000-0000-0000-000000000000')).status).toBe(404);
    expect(await actionsOf('webhook_removed')).toHaveLength(1);
    expect(JSON.stringify((await audit()).body)).not.toContain('T0SECRET');
  });

  it('a sink with nothing pending is removed with failed_deliveries 0', async () => {
    const { path } = await secretFile();
    const { sink } = (await addSink({ url: 'https://hooks.example.com/services/x', secret_file: path })).body;
    await removeSink(sink.sink_id);
    expect((await actionsOf('webhook_removed')).map((event) => event.after)).toEqual([{ status: 'removed', failed_deliveries: 0 }]);
  });
});

describe('the installation budget in the audit trail', () => {
  const setBudget = (body: Record<string, unknown>, version?: string) =>
    call(ledger.url, 'PUT', '/budgets/installation', { token: ledger.adminToken, body: { units_scale: 6, currency: 'USD', ...body }, ...(version === undefined ? {} : { headers: { 'if-match': version } }) });

  it('a change records budget_changed once (limits as digit strings or null, alert percentages, version), not policy_changed; a stale change records nothing', async () => {
    expect((await setBudget({ day_budget_units: '3000000', month_budget_units: '90000000', alert_percentages: [90, 50] }, '1')).status).toBe(200);
    expect((await setBudget({ day_budget_units: '1' }, '1')).status).toBe(412);
    const events = (await audit()).body.events.filter((event) => event.subject_id === 'installation_budget');
    expect(events).toEqual([
      expect.objectContaining({
        ...admin,
        action: 'budget_changed',
        agent_id: null,
        before: { version: '1', day_budget_units: null, week_budget_units: null, month_budget_units: null, alert_percentages: '50,80,100' },
        after: { version: '2', day_budget_units: '3000000', week_budget_units: null, month_budget_units: '90000000', alert_percentages: '50,90' },
        reason: null,
      }),
    ]);
    const updatedAt = ledger.query<{ updated_at: bigint }>('SELECT updated_at FROM installation_budget')[0]?.updated_at;
    expect(BigInt(msOf(events[0]?.at ?? null) ?? 0)).toBe(updatedAt);
  });
});
