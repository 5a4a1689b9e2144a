import { randomBytes } from 'node:crypto';
import { chmod, mkdir, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { DELIVERIES_OF_EVENT_SQL } from '../../src/ledger/store/webhook-rows.js';
import { verifyWebhookSignature } from '../../src/ledger/webhooks/webhook-signature.js';
import type { LedgerEvent, LedgerEventPage, LedgerWebhookDelivery, LedgerWebhookSink } from '../../src/ledger/wire/answers.js';
import { call, ledgerPerTest, type Actors, type TestLedger } from '../support/ledger.js';
import { deliveredIds, startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver.js';

/*
 * Issue 28 item 3, webhook sinks, in process: a real ledger app on a real SQLite file and a real
 * loopback receiver. The operator adds a sink (its input checked, with field paths), the ledger
 * POSTs each new event signed as Stripe signs, retries what is not answered 2xx, gives up 24 h
 * after the event, and never shows the sink's URL path or its secret anywhere but in the database.
 * Process-level behaviour (SIGKILL, a hanging receiver, the CLI) is in webhooks-process.test.ts.
 */

let ledger: TestLedger;
let actors: Actors;
ledgerPerTest(
  (started, its) => {
    ledger = started;
    actors = its;
  },
  { webhookDelivery: { timeout_ms: 500, first_retry_ms: 20, max_retry_ms: 100 } },
);

const receivers: WebhookReceiver[] = [];
afterEach(async () => {
  await Promise.all(receivers.splice(0).map((receiver) => receiver.close()));
});

async function receiver(mode: number | 'hang' = 200): Promise<WebhookReceiver> {
  const started = await startWebhookReceiver(mode);
  receivers.push(started);
  return started;
}

const SECRET_PATH_PART = 'T0SECRET/B0SECRET/xoxsecretpathpart';

async function secretFile(name = 'hook.secret', content = randomBytes(32).toString('hex'), mode = 0o600): Promise<{ path: string; secret: string }> {
  const dir = join(ledger.dir, 'secrets');
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const path = join(dir, name);
  await writeFile(path, `${content}\n`, { mode });
  await chmod(path, mode);
  return { path, secret: content };
}

type Answer<T> = T & { error?: { code: string; reason_code?: string; fields?: string[] } };

const addSink = (body: Record<string, unknown>) => call<Answer<{ sink: LedgerWebhookSink }>>(ledger.url, 'POST', '/webhooks', { token: ledger.adminToken, body });
const deliveries = (query = '') => call<{ deliveries: LedgerWebhookDelivery[] }>(ledger.url, 'GET', `/webhooks/deliveries${query}`, { token: ledger.adminToken });

async function request(amountUnits: string): Promise<void> {
  const answer = await call(ledger.url, 'POST', '/authorizations', {
    token: actors.agent,
    body: { amount_units: amountUnits, units_scale: 6, currency: 'USD', target_id: 'lexec:target:v1:flux-schnell', prompt: 'a lighthouse at dusk' },
  });
  expect(answer.status).toBe(201);
}

async function allEvents(): Promise<LedgerEvent[]> {
  return (await call<LedgerEventPage>(ledger.url, 'GET', '/events?limit=500', { token: ledger.adminToken })).body.events;
}

describe('adding a webhook sink', () => {
  it('refuses bad input with the field at fault and never echoes the secret', async () => {
    const good = await secretFile();
    const loose = await secretFile('loose.secret', randomBytes(32).toString('hex'), 0o644);
    const short = await secretFile('short.secret', 'only-twenty-bytes-yes');
    await symlink(good.path, join(ledger.dir, 'secrets', 'link.secret'));
    const cases: [Record<string, unknown>, string, string | undefined][] = [
      [{ url: 'http://hooks.example.com/x', secret_file: good.path }, 'url', undefined],
      [{ url: 'ftp://127.0.0.1/x', secret_file: good.path }, 'url', undefined],
      [{ url: 'https://user:pw@hooks.example.com/x', secret_file: good.path }, 'url', undefined],
      [{ url: 'https://hooks.example.com/x', secret_file: 'relative/hook.secret' }, 'secret_file', undefined],
      [{ url: 'https://hooks.example.com/x', secret_file: join(ledger.dir, 'secrets', 'absent.secret') }, 'secret_file', 'secret_file_missing'],
      [{ url: 'https://hooks.example.com/x', secret_file: loose.path }, 'secret_file', 'secret_file_not_private'],
      [{ url: 'https://hooks.example.com/x', secret_file: short.path }, 'secret_file', 'secret_file_too_short'],
      [{ url: 'https://hooks.example.com/x', secret_file: join(ledger.dir, 'secrets', 'link.secret') }, 'secret_file', 'secret_file_not_regular'],
      [{ url: 'https://hooks.example.com/x', secret_file: join(ledger.dir, 'secrets') }, 'secret_file', 'secret_file_not_regular'],
      [{ url: 'https://hooks.example.com/x', secret_file: good.path, events: ['authorization.requested', 'authorization.exploded'] }, 'events[1]', undefined],
      [{ url: 'https://hooks.example.com/x', secret_file: good.path, format: 'discord' }, 'format', undefined],
    ];
    for (const [body, field, reason] of cases) {
      const answer = await addSink(body);
      expect([answer.status, answer.body.error?.fields], JSON.stringify(body)).toEqual([400, [field]]);
      if (reason !== undefined) expect(answer.body.error?.reason_code).toBe(reason);
      for (const secret of [good.secret, loose.secret, short.secret]) expect(JSON.stringify(answer.body)).not.toContain(secret);
    }
    // https anywhere and http to each loopback form are taken.
    for (const url of ['https://hooks.example.com/x', 'http://127.0.0.2:9/x', 'http://[::1]:9/x', 'http://localhost:9/x']) {
      expect((await addSink({ url, secret_file: good.path })).status, url).toBe(201);
    }
    // Only the admin.
    const asAgent = await call(ledger.url, 'POST', '/webhooks', { token: actors.agent, body: { url: 'https://hooks.example.com/x', secret_file: good.path } });
    expect(asAgent.status).toBe(401);
  });
});

describe('delivering events', () => {
  it('POSTs each new event as GET /events shows it, signed with the secret file, and only events after the sink was added', async () => {
    await request('500000'); // before the sink: never delivered
    const hook = await receiver(200);
    const { path, secret } = await secretFile();
    const added = await addSink({ url: `${hook.origin}/hooks/${SECRET_PATH_PART}`, secret_file: path });
    expect(added.status).toBe(201);
    await request('2000000'); // requested + approval.waiting
    const after = (await allEvents()).slice(1);
    expect(after.map((event) => event.type)).toEqual(['authorization.requested', 'approval.waiting']);
    await hook.until((received) => deliveredIds(received).size === 2);

    for (const event of after) {
      const got = hook.received.find((received) => received.headers['x-lexec-event-id'] === event.event_id);
      expect(got?.path).toBe(`/hooks/${SECRET_PATH_PART}`);
      expect(got?.headers['content-type']).toBe('application/json');
      expect(got?.headers['x-lexec-event-type']).toBe(event.type);
      expect(JSON.parse(got?.body ?? '')).toEqual(event);
      expect(got?.body).not.toContain('lighthouse');
      const signature = String(got?.headers['x-lexec-signature']);
      expect(signature).toMatch(/^t=\d+,v1=[0-9a-f]{64}$/);
      const now = Math.floor(Date.now() / 1000);
      expect(verifyWebhookSignature(secret, got?.body ?? '', signature, now)).toBe(true);
      expect(verifyWebhookSignature(randomBytes(32).toString('hex'), got?.body ?? '', signature, now)).toBe(false);
      expect(verifyWebhookSignature(secret, `${got?.body ?? ''} `, signature, now)).toBe(false);
    }
    // Recorded once answered (a moment after the receiver has it).
    await expect
      .poll(async () => (await deliveries()).body.deliveries.map((delivery) => [delivery.event_id, delivery.status, delivery.attempts, delivery.last_http_status]))
      .toEqual(after.reverse().map((event) => [event.event_id, 'delivered', 1, 200]));
  });

  it('pages the deliveries newest first: next_before continues a full page, every delivery once, and null ends it', async () => {
    const hook = await receiver(200);
    const { path } = await secretFile();
    expect((await addSink({ url: `${hook.origin}/a`, secret_file: path })).status).toBe(201);
    expect((await addSink({ url: `${hook.origin}/b`, secret_file: path })).status).toBe(201);
    await request('2000000');
    await request('2000000');
    // Two events each, to two sinks: eight deliveries.
    await expect.poll(async () => (await deliveries()).body.deliveries.filter((delivery) => delivery.status === 'delivered').length).toBe(8);
    type Page = { deliveries: LedgerWebhookDelivery[]; next_before: string | null };
    const pages: Page[] = [];
    let before: string | null = '';
    while (before !== null) {
      const page: { status: number; body: Page } = await call<Page>(
        ledger.url,
        'GET',
        `/webhooks/deliveries?limit=3${before === '' ? '' : `&before=${before}`}`,
        { token: ledger.adminToken },
      );
      expect(page.status).toBe(200);
      pages.push(page.body);
      before = page.body.next_before;
    }
    expect(pages.map((page) => page.deliveries.length)).toEqual([3, 3, 2]);
    const ids = pages.flatMap((page) => page.deliveries.map((delivery) => BigInt(delivery.delivery_id ?? '0')));
    expect(ids.every((id, index) => index === 0 || id < (ids[index - 1] ?? 0n))).toBe(true);
    expect(ids.map(String)).toEqual((await deliveries()).body.deliveries.map((delivery) => delivery.delivery_id));
    expect(pages[0]?.next_before).toBe(pages[0]?.deliveries.at(-1)?.delivery_id);
    // A page that is exactly full says more may follow; the next one is then empty and ends it.
    const exact = await call<{ deliveries: unknown[]; next_before: string | null }>(ledger.url, 'GET', `/webhooks/deliveries?limit=8`, { token: ledger.adminToken });
    expect(exact.body.deliveries).toHaveLength(8);
    const after = await call<{ deliveries: unknown[]; next_before: string | null }>(ledger.url, 'GET', `/webhooks/deliveries?before=${exact.body.next_before ?? ''}`, { token: ledger.adminToken });
    expect(after.body).toEqual({ deliveries: [], next_before: null });
    for (const bad of ['abc', '-1', '99999999999999999999']) {
      const refused = await call<Answer<object>>(ledger.url, 'GET', `/webhooks/deliveries?before=${bad}`, { token: ledger.adminToken });
      expect([refused.status, refused.body.error?.fields]).toEqual([400, ['before']]);
    }
  });

  it('finds one event\'s deliveries directly: one per sink that took it up, through each sink\'s unique row, filters as the list', async () => {
    const hook = await receiver(200);
    const { path } = await secretFile();
    const a = (await addSink({ url: `${hook.origin}/a`, secret_file: path })).body.sink;
    const b = (await addSink({ url: `${hook.origin}/b`, secret_file: path, events: ['approval.waiting'] })).body.sink;
    await request('2000000');
    await request('2000000');
    await expect.poll(async () => (await deliveries()).body.deliveries.filter((delivery) => delivery.status === 'delivered').length).toBe(6);
    const events = await allEvents();
    const waiting = events.filter((event) => event.type === 'approval.waiting').at(-1);
    const requested = events.filter((event) => event.type === 'authorization.requested').at(-1);
    type Page = { deliveries: LedgerWebhookDelivery[]; next_before: string | null };
    const ofEvent = async (query: string) => (await call<Page>(ledger.url, 'GET', `/webhooks/deliveries?${query}`, { token: ledger.adminToken })).body;

    // Taken by both sinks: two deliveries, newest first; the same rows the whole list holds for it.
    const both = await ofEvent(`event_id=${waiting?.event_id ?? ''}`);
    expect(both.deliveries.map((delivery) => [delivery.sink_id, delivery.event_id, delivery.event_type, delivery.status])).toEqual([
      [b.sink_id, waiting?.event_id, 'approval.waiting', 'delivered'],
      [a.sink_id, waiting?.event_id, 'approval.waiting', 'delivered'],
    ]);
    expect(both).toEqual({ deliveries: (await deliveries()).body.deliveries.filter((delivery) => delivery.event_id === waiting?.event_id), next_before: null });
    // Only one sink took `authorization.requested`; a sink filter, `failed`, and a page still apply.
    expect((await ofEvent(`event_id=${requested?.event_id ?? ''}`)).deliveries.map((delivery) => delivery.sink_id)).toEqual([a.sink_id]);
    expect((await ofEvent(`event_id=${waiting?.event_id ?? ''}&sink_id=${a.sink_id}`)).deliveries.map((delivery) => delivery.sink_id)).toEqual([a.sink_id]);
    expect((await ofEvent(`event_id=${waiting?.event_id ?? ''}&failed=true`)).deliveries).toEqual([]);
    const first = await ofEvent(`event_id=${waiting?.event_id ?? ''}&limit=1`);
    expect(first.deliveries.map((delivery) => delivery.sink_id)).toEqual([b.sink_id]);
    expect((await ofEvent(`event_id=${waiting?.event_id ?? ''}&before=${first.next_before ?? ''}`)).deliveries.map((delivery) => delivery.sink_id)).toEqual([a.sink_id]);
    // An event no sink took, or none at all: nothing.
    expect((await ofEvent('event_id=999999')).deliveries).toEqual([]);
    for (const bad of ['abc', '-1', '99999999999999999999', '']) {
      const refused = await call<Answer<object>>(ledger.url, 'GET', `/webhooks/deliveries?event_id=${bad}`, { token: ledger.adminToken });
      expect([bad, refused.status, refused.body.error?.fields]).toEqual([bad, 400, ['event_id']]);
    }

    // The plan: a lookup per sink in UNIQUE (sink_id, event_id), never a walk of every delivery.
    const db = new Database(ledger.databasePath, { readonly: true });
    try {
      const plan = (db.prepare(`EXPLAIN QUERY PLAN ${DELIVERIES_OF_EVENT_SQL}`).all({ event_id: 1, sink_id: null, status: null, before: null, limit: 100 }) as { detail: string }[]).map((row) => row.detail).join('\n');
      expect(plan).toMatch(/SEARCH d USING INDEX sqlite_autoindex_webhook_deliveries_1 \(sink_id=\? AND event_id=\?/);
      expect(plan).not.toMatch(/SCAN d\b/);
    } finally {
      db.close();
    }
  });

  it('starts from an earlier event when asked (from_event_id)', async () => {
    await request('500000');
    await request('500000');
    const hook = await receiver(200);
    const { path } = await secretFile();
    const added = await addSink({ url: `${hook.origin}/in`, secret_file: path, from_event_id: '2' });
    expect(added.body.sink.cursor_event_id).toBe('1');
    await hook.until((received) => deliveredIds(received).size === 1);
    expect([...deliveredIds(hook.received)]).toEqual(['2']);
  });

  it('retries an answer that is not 2xx until one is, and says how the last attempt went', async () => {
    const hook = await receiver(500);
    const { path } = await secretFile();
    await addSink({ url: `${hook.origin}/in`, secret_file: path, events: ['approval.waiting'] });
    await request('500000'); // requested only: not wanted by this sink
    await request('2000000');
    await hook.until((received) => received.length >= 3);
    const pending = (await deliveries()).body.deliveries;
    expect(pending).toHaveLength(1);
    expect(pending[0]).toMatchObject({ event_type: 'approval.waiting', status: 'pending', last_http_status: 500, last_error: 'http_status' });
    hook.setMode(204);
    await hook.until((received) => deliveredIds(received).size === 1);
    await expect.poll(async () => (await deliveries()).body.deliveries[0]?.status).toBe('delivered');
    expect(new Set(hook.received.map((received) => received.headers['x-lexec-event-type']))).toEqual(new Set(['approval.waiting']));
  });

  it('reads the secret file at each delivery: a rotated secret signs the next one', async () => {
    const hook = await receiver(200);
    const { path, secret } = await secretFile();
    await addSink({ url: `${hook.origin}/in`, secret_file: path, events: ['authorization.requested'] });
    await request('500000');
    await hook.until((received) => received.length === 1);
    const rotated = randomBytes(40).toString('base64url');
    await writeFile(path, rotated, { mode: 0o600 });
    await request('500000');
    await hook.until((received) => received.length === 2);
    const [first, second] = hook.received.map((received) => ({ body: received.body, signature: String(received.headers['x-lexec-signature']) }));
    const now = Math.floor(Date.now() / 1000);
    expect(verifyWebhookSignature(secret, first?.body ?? '', first?.signature ?? '', now)).toBe(true);
    expect(verifyWebhookSignature(rotated, second?.body ?? '', second?.signature ?? '', now)).toBe(true);
    expect(verifyWebhookSignature(secret, second?.body ?? '', second?.signature ?? '', now)).toBe(false);
  });

  it('posts a Slack message in plain words for a slack sink, without the prompt', async () => {
    const hook = await receiver(200);
    const { path } = await secretFile();
    await addSink({ url: `${hook.origin}/services/${SECRET_PATH_PART}`, secret_file: path, format: 'slack', events: ['approval.waiting'] });
    await request('2500000');
    await hook.until((received) => received.length === 1);
    const message = JSON.parse(hook.received[0]?.body ?? '') as { text: string };
    expect(Object.keys(message)).toEqual(['text']);
    expect(message.text).toContain('agent bot waits for a human to approve a spend authorization for 2.500000 USD on target lexec:target:v1:flux-schnell');
    expect(message.text).not.toContain('lighthouse');
  });

  it('gives up 24 h after the event: the delivery is failed, listed with --failed, and counted', async () => {
    const hook = await receiver(503);
    const { path } = await secretFile();
    const sink = (await addSink({ url: `${hook.origin}/in`, secret_file: path, events: ['authorization.requested'] })).body.sink;
    await request('500000');
    await hook.until((received) => received.length >= 1);
    ledger.advance(24 * 3_600_000 + 1);
    await expect.poll(async () => (await deliveries(`?failed=true&sink_id=${sink.sink_id}`)).body.deliveries.length).toBe(1);
    const [failed] = (await deliveries('?failed=true')).body.deliveries;
    expect(failed).toMatchObject({ status: 'failed', last_http_status: 503, next_attempt_at: null });
    const tried = hook.received.length;
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(hook.received.length).toBe(tried);
    const listed = await call<{ sinks: LedgerWebhookSink[] }>(ledger.url, 'GET', '/webhooks', { token: ledger.adminToken });
    expect(listed.body.sinks[0]?.deliveries).toEqual({ delivered: 0, failed: 1, pending: 0 });
  });

  it('stops delivering to a removed sink (its pending deliveries fail as sink_removed); removing twice changes nothing', async () => {
    const hook = await receiver(500);
    const { path } = await secretFile();
    const sink = (await addSink({ url: `${hook.origin}/in`, secret_file: path })).body.sink;
    await request('500000');
    await hook.until((received) => received.length >= 1);
    const removed = await call<{ changed: boolean; sink: LedgerWebhookSink }>(ledger.url, 'POST', `/webhooks/${sink.sink_id}/remove`, { token: ledger.adminToken, body: {} });
    expect([removed.status, removed.body.changed, removed.body.sink.removed_at === null]).toEqual([200, true, false]);
    const again = await call<{ changed: boolean }>(ledger.url, 'POST', `/webhooks/${sink.sink_id}/remove`, { token: ledger.adminToken, body: {} });
    expect(again.body.changed).toBe(false);
    expect((await deliveries()).body.deliveries.map((delivery) => [delivery.status, delivery.last_error])).toEqual([['failed', 'sink_removed']]);
    const unknown = await call(ledger.url, 'POST', '/webhooks/whk_00000000-0000-0000-0000-000000000000/remove', { token: ledger.adminToken, body: {} });
    expect(unknown.status).toBe(404);
    expect((await call<{ sinks: unknown[] }>(ledger.url, 'GET', '/webhooks', { token: ledger.adminToken })).body.sinks).toEqual([]);
    expect((await call<{ sinks: unknown[] }>(ledger.url, 'GET', '/webhooks?all=true', { token: ledger.adminToken })).body.sinks).toHaveLength(1);
  });

  it('shows the URL only as its origin and never logs its path or the secret', async () => {
    const hook = await receiver(500);
    const { path, secret } = await secretFile();
    const added = await addSink({ url: `${hook.origin}/services/${SECRET_PATH_PART}?token=xyzzyquerysecret`, secret_file: path });
    expect(added.body.sink.url).toBe(`${hook.origin}/…`);
    await request('500000');
    await hook.until((received) => received.length >= 2);
    const listed = await call(ledger.url, 'GET', '/webhooks', { token: ledger.adminToken });
    const surfaces = [JSON.stringify(added.body), JSON.stringify(listed.body), JSON.stringify((await deliveries()).body), JSON.stringify(ledger.logs())];
    for (const surface of surfaces) {
      expect(surface).not.toContain(SECRET_PATH_PART);
      expect(surface).not.toContain('xyzzyquerysecret');
      expect(surface).not.toContain(secret);
    }
    expect(ledger.logs().some((line) => line.event === 'webhook_delivery_retry' && line.url === `${hook.origin}/…`)).toBe(true);
  });
});
