import { randomBytes } from 'node:crypto';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readPrivateFile } from '../../src/credentials/private-file.js';
import { verifyWebhookSignature } from '../../src/ledger/webhooks/webhook-signature.js';
import type { LedgerEventPage, LedgerWebhookDelivery, LedgerWebhookSink } from '../../src/ledger/wire/answers.js';
import { expectFailure, expectResult, makeTempDir, removeDir, runLexec, type CliRun } from '../support/cli.js';
import { call, setUpActors, type Actors } from '../support/ledger.js';
import { ledgerConfig, spawnLedger, type LedgerProcess } from '../support/ledger-process.js';
import { deliveredIds, startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver.js';

/*
 * Issue 28's webhook proofs with real processes: `lexec ledger serve` children, the built CLI,
 * and a real loopback receiver that first fails (500), then hangs (never answers), then recovers.
 * While it hangs, spend requests are still answered (delivery runs apart from them); the ledger
 * is SIGKILLed with deliveries in flight and pending, started again on its database, and every
 * event is delivered at least once, each signature verifying with the sink's secret and not with
 * another. No CLI output, ledger log or error holds the secret or the URL's path.
 */

const SECRET_PATH_PART = 'T0PROC/B0PROC/processsecretpathpart';

let dir: string;
let ledger: LedgerProcess;
const ledgers: LedgerProcess[] = [];
let receiver: WebhookReceiver;
let adminToken: string;
let actors: Actors;
let secretPath: string;
let secret: string;
const runs: CliRun[] = [];
// Short timings so the hang and the retries fit in a test: 1.5 s per POST, retries from 50 ms to 400 ms.
const config = () => ledgerConfig(dir, { webhook_delivery: { timeout_ms: 1500, first_retry_ms: 50, max_retry_ms: 400 } });

async function lexec(args: readonly string[]): Promise<CliRun> {
  const run = await runLexec(args);
  runs.push(run);
  return run;
}
const admin = () => ['--url', ledger.url, '--token-file', ledger.adminCapabilityPath];

async function start(): Promise<void> {
  ledger = await spawnLedger(dir, config());
  ledgers.push(ledger);
}

async function request(): Promise<number> {
  const answer = await call(ledger.url, 'POST', '/authorizations', {
    token: actors.agent,
    body: { amount_units: '2000000', units_scale: 6, currency: 'USD', target_id: 'lexec:target:v1:flux-schnell', prompt: 'a harbour at night' },
  });
  return answer.status;
}

beforeAll(async () => {
  dir = await makeTempDir('lexec-webhooks-process-');
  await start();
  adminToken = await readPrivateFile(ledger.adminCapabilityPath, 'admin capability');
  actors = await setUpActors({ url: ledger.url, adminToken });
  receiver = await startWebhookReceiver(500);
  await mkdir(join(dir, 'secrets'), { mode: 0o700 });
  secret = randomBytes(32).toString('hex');
  secretPath = join(dir, 'secrets', 'hook.secret');
  await writeFile(secretPath, `${secret}\n`, { mode: 0o600 });
}, 120_000);

afterAll(async () => {
  await receiver.close();
  for (const started of ledgers) await started.stop();
  const logs = ledgers.map((started) => started.stderrLines().join('\n')).join('\n');
  await removeDir(dir);
  for (const surface of [logs, ...runs.map((run) => run.stdout + run.stderr)]) {
    expect(surface).not.toContain(secret);
    expect(surface).not.toContain(SECRET_PATH_PART);
    expect(surface).not.toContain(adminToken);
  }
});

describe('lexec ledger webhooks, with a receiver that fails, hangs and recovers', () => {
  it('refuses bad input before sending anything, naming the field at fault', async () => {
    const base = [...admin(), '--secret-file', secretPath, '--json'];
    const plainHttp = expectFailure(await lexec(['ledger', 'webhooks', 'add', ...base, '--webhook-url', `http://hooks.example.com/${SECRET_PATH_PART}`]), 2, 'invalid_flag_value');
    expect(plainHttp.issues?.map((issue) => issue.path)).toEqual(['url']);
    const unknownType = expectFailure(await lexec(['ledger', 'webhooks', 'add', ...base, '--webhook-url', `${receiver.origin}/x`, '--events', 'approval.waiting,authorization.exploded']), 2, 'invalid_flag_value');
    expect(unknownType.issues?.map((issue) => issue.path)).toEqual(['events[1]']);
    const loosePath = join(dir, 'secrets', 'loose.secret');
    await writeFile(loosePath, randomBytes(32).toString('hex'), { mode: 0o644 });
    const loose = expectFailure(await lexec(['ledger', 'webhooks', 'add', ...admin(), '--secret-file', loosePath, '--webhook-url', `${receiver.origin}/x`, '--json']), 1, 'webhook_secret_file_refused');
    expect([loose.issues?.[0]?.path, loose.issues?.[0]?.message]).toEqual(['secret_file', 'secret_file_not_private']);
    const relative = expectFailure(await lexec(['ledger', 'webhooks', 'add', ...admin(), '--secret-file', 'secrets/hook.secret', '--webhook-url', `${receiver.origin}/x`, '--json']), 2, 'invalid_flag_value');
    expect(relative.issues?.map((issue) => issue.path)).toEqual(['secret_file']);
    expect((await call<{ sinks: unknown[] }>(ledger.url, 'GET', '/webhooks', { token: adminToken })).body.sinks).toEqual([]);
  });

  it('delivers every event at least once across failures, a hang and a SIGKILL, and never slows spend requests', async () => {
    const added = expectResult(
      await lexec(['ledger', 'webhooks', 'add', ...admin(), '--webhook-url', `${receiver.origin}/hooks/${SECRET_PATH_PART}`, '--secret-file', secretPath, '--json']),
    ) as { sink: LedgerWebhookSink };
    expect(added.sink.url).toBe(`${receiver.origin}/…`);

    // 1. The receiver fails: every event is tried, none delivered.
    for (let i = 0; i < 3; i += 1) expect(await request()).toBe(201);
    await receiver.until((received) => new Set(received.map((got) => got.headers['x-lexec-event-id'])).size === 6);
    expect(deliveredIds(receiver.received).size).toBe(0);

    // 2. The receiver hangs: deliveries are in flight, never answered; spend requests are still answered.
    receiver.setMode('hang');
    await receiver.until((received) => received.filter((got) => got.answered === null).length >= 1);
    for (let i = 0; i < 2; i += 1) expect(await request()).toBe(201);
    await receiver.until((received) => received.filter((got) => got.answered === null).length >= 8);

    // 3. SIGKILL with deliveries in flight and pending; the ledger starts again on its database.
    expect(await ledger.stop('SIGKILL')).not.toBe(0);
    receiver.setMode(200);
    await start();
    const events = (await call<LedgerEventPage>(ledger.url, 'GET', '/events?limit=500', { token: adminToken })).body.events;
    const wanted = events.slice(-10).map((event) => event.event_id);
    expect(events.slice(-10).map((event) => event.type)).toEqual(Array.from({ length: 5 }, () => ['authorization.requested', 'approval.waiting']).flat());
    await receiver.until((received) => wanted.every((id) => deliveredIds(received).has(id)), 20_000);

    // Every request a receiver got is signed with the sink's secret, and not with another.
    const now = Math.floor(Date.now() / 1000);
    const other = randomBytes(32).toString('hex');
    for (const got of receiver.received) {
      const signature = String(got.headers['x-lexec-signature']);
      expect(verifyWebhookSignature(secret, got.body, signature, now)).toBe(true);
      expect(verifyWebhookSignature(other, got.body, signature, now)).toBe(false);
      expect(got.body).not.toContain('harbour');
      expect((JSON.parse(got.body) as { event_id: string }).event_id).toBe(got.headers['x-lexec-event-id']);
    }

    // The ledger says so too.
    await expect
      .poll(async () => {
        const shown = expectResult(await lexec(['ledger', 'webhooks', 'deliveries', ...admin(), '--json'])) as { deliveries: LedgerWebhookDelivery[] };
        return shown.deliveries.filter((delivery) => delivery.status === 'delivered').length;
      })
      .toBe(10);
    // Paged by the CLI, three at a time: each page's next_before continues it, every delivery once, newest first.
    type Page = { deliveries: LedgerWebhookDelivery[]; next_before: string | null };
    const seen: string[] = [];
    let before: string | null = null;
    do {
      const page = expectResult(await lexec(['ledger', 'webhooks', 'deliveries', ...admin(), '--limit', '3', ...(before === null ? [] : ['--before', before]), '--json'])) as Page;
      seen.push(...page.deliveries.map((delivery) => delivery.delivery_id ?? ''));
      before = page.next_before;
    } while (before !== null);
    const whole = expectResult(await lexec(['ledger', 'webhooks', 'deliveries', ...admin(), '--limit', '500', '--json'])) as Page;
    expect(seen).toEqual(whole.deliveries.map((delivery) => delivery.delivery_id));
    expect(whole.next_before).toBeNull();
    const firstPage = await lexec(['ledger', 'webhooks', 'deliveries', ...admin(), '--limit', '3']);
    expect(firstPage.stderr).toContain(`Older deliveries: --before ${seen[2] ?? ''}.`);
    expect(firstPage.stdout).not.toContain('--before');
    expectFailure(await lexec(['ledger', 'webhooks', 'deliveries', ...admin(), '--before', 'x', '--json']), 2, 'invalid_flag_value');
    // Did event N reach the sink? --event answers with its delivery, without paging.
    const asked = wanted[3] ?? '';
    const ofEvent = expectResult(await lexec(['ledger', 'webhooks', 'deliveries', ...admin(), '--event', asked, '--json'])) as Page;
    expect(ofEvent.deliveries.map((delivery) => [delivery.event_id, delivery.sink_id, delivery.status])).toEqual([[asked, added.sink.sink_id, 'delivered']]);
    expect(ofEvent.deliveries).toEqual(whole.deliveries.filter((delivery) => delivery.event_id === asked));
    expectFailure(await lexec(['ledger', 'webhooks', 'deliveries', ...admin(), '--event', '-3', '--json']), 2, 'invalid_flag_value');
    const failed = expectResult(await lexec(['ledger', 'webhooks', 'deliveries', ...admin(), '--failed', '--sink', added.sink.sink_id, '--json'])) as { deliveries: unknown[] };
    expect(failed.deliveries).toEqual([]);
    const listed = expectResult(await lexec(['ledger', 'webhooks', 'list', ...admin(), '--json'])) as { sinks: LedgerWebhookSink[] };
    expect(listed.sinks.map((sink) => [sink.url, sink.deliveries.delivered, sink.deliveries.pending])).toEqual([[`${receiver.origin}/…`, 10, 0]]);
    const human = await lexec(['ledger', 'webhooks', 'list', ...admin()]);
    expect(human.stdout).toContain(`${receiver.origin}/…`);
    const removed = expectResult(await lexec(['ledger', 'webhooks', 'remove', added.sink.sink_id, ...admin(), '--json'])) as { changed: boolean };
    expect(removed.changed).toBe(true);
  }, 90_000);

  it('a ledger started with a retention of 7 days removes the deliveries delivered before it, and still counts them delivered', async () => {
    // The ten deliveries above, aged as if delivered 10 days ago (five) and 3 days ago (five) — the
    // test moves their time, as the days would — with the ledger stopped.
    expect(await ledger.stop()).toBe(0);
    const db = new Database(join(dir, 'state', 'ledger.db'));
    try {
      const ids = (db.prepare("SELECT delivery_id FROM webhook_deliveries WHERE status = 'delivered' ORDER BY delivery_id").all() as { delivery_id: number }[]).map((row) => row.delivery_id);
      expect(ids).toHaveLength(10);
      const age = db.prepare('UPDATE webhook_deliveries SET delivered_at = ? WHERE delivery_id = ?');
      ids.forEach((id, index) => age.run(Date.now() - (index < 5 ? 10 : 3) * 86_400_000, id));
    } finally {
      db.close();
    }
    ledger = await spawnLedger(dir, { ...config(), webhook_delivery: { timeout_ms: 1500, first_retry_ms: 50, max_retry_ms: 400, delivered_retention_days: 7 } });
    ledgers.push(ledger);
    await expect.poll(() => ledger.events().find((line) => line.event === 'webhook_deliveries_pruned'), { timeout: 20_000 }).toMatchObject({ removed: 5, retention_days: 7 });
    const shown = expectResult(await lexec(['ledger', 'webhooks', 'deliveries', ...admin(), '--json'])) as { deliveries: LedgerWebhookDelivery[] };
    expect(shown.deliveries.filter((delivery) => delivery.status === 'delivered')).toHaveLength(5);
    const sinks = (await call<{ sinks: LedgerWebhookSink[] }>(ledger.url, 'GET', '/webhooks?all=true', { token: adminToken })).body.sinks;
    expect(sinks.map((sink) => sink.deliveries)).toEqual([{ delivered: 10, failed: 0, pending: 0 }]);
  }, 60_000);
});
