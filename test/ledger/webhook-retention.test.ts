import { randomBytes } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import type Database from 'better-sqlite3';
import { pino } from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { BuildInfo } from '../../src/build-info.js';
import { renderGeneration } from '../../src/launcher/generations/render-generation.js';
import { profilePaths } from '../../src/launcher/home/stack-home.js';
import { parseProfile } from '../../src/launcher/profiles/profile-store.js';
import { loadLedgerConfig } from '../../src/ledger/ledger-config.js';
import { createEventStore } from '../../src/ledger/store/event-store.js';
import { LEDGER_MIGRATIONS } from '../../src/ledger/store/migrations.js';
import { PRUNE_SQL } from '../../src/ledger/store/webhook-rows.js';
import { createWebhookStore, type WebhookStore } from '../../src/ledger/store/webhook-store.js';
import { DEFAULT_WEBHOOK_DELIVERY, startWebhookDelivery, type WebhookDelivery } from '../../src/ledger/webhooks/webhook-delivery.js';
import { openDatabase } from '../../src/storage/open-database.js';
import { makeTempDir, removeDir } from '../support/cli.js';
import { ledgerConfig } from '../support/ledger-process.js';
import { exampleTable, sandboxWithLedgerSetting, toToml } from '../support/example-profiles.js';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver.js';

/*
 * Delivered webhook deliveries age out (ledger migration 19; docs/ledger.md "Webhooks",
 * "Retention"): the delivery worker removes delivered rows older than the retention, the oldest
 * first, in batches; pending and failed ones stay however old; each sink's delivered count stays
 * what was delivered, and what was removed is tallied beside it (`pruned`) so the counts still
 * match the rows. Real SQLite files, a real loopback receiver, the store's own take-up.
 */

const DAY = 86_400_000;
const T0 = Date.parse('2026-10-01T00:00:00Z');

let dir: string;
let db: Database.Database | undefined;
let receiver: WebhookReceiver | undefined;
let delivery: WebhookDelivery | undefined;
beforeEach(async () => {
  dir = await makeTempDir('lexec-webhook-retention-');
});
afterEach(async () => {
  delivery?.stop();
  delivery = undefined;
  await receiver?.close();
  receiver = undefined;
  db?.close();
  db = undefined;
  await removeDir(dir);
});

/** A migrated ledger database on a file with a clock the test moves, and sinks inserted as the store keeps them. */
function ledgerAt(sinks: readonly { id: string; url: string; secretPath: string }[]) {
  const clock = { now: T0 };
  db = openDatabase(join(dir, 'ledger.db'), LEDGER_MIGRATIONS);
  const store = createWebhookStore(db, () => clock.now);
  const events = createEventStore(db);
  for (const sink of sinks) {
    db.prepare(
      `INSERT INTO webhook_sinks (sink_id, url, format, event_types, secret_path, created_at, removed_at, cursor_event_id)
       VALUES (?, ?, 'lexec', NULL, ?, ?, NULL, 0)`,
    ).run(sink.id, sink.url, sink.secretPath, clock.now);
  }
  const database = db;
  const append = (count: number) => { database
      .transaction(() => {
        for (let i = 0; i < count; i += 1) events.append({ type: 'agent.suspended', at: clock.now, agentId: null, details: {} });
      })
      .immediate(); };
  return { clock, store, append, db: database };
}

/** Each sink's rows by status and its kept counts (delivered, pruned, …), from the database itself. */
function figures(database: Database.Database) {
  const read = (sql: string) =>
    Object.fromEntries((database.prepare(sql).all() as { sink_id: string; status: string; n: bigint | number }[]).map((row) => [`${row.sink_id}/${row.status}`, Number(row.n)]));
  return {
    rows: read('SELECT sink_id, status, COUNT(*) AS n FROM webhook_deliveries GROUP BY 1, 2'),
    kept: read('SELECT sink_id, status, count AS n FROM webhook_delivery_counts WHERE count <> 0'),
  };
}

/** delivered (kept) = the rows delivered + pruned, for every sink; the other statuses equal their rows. */
function expectCountsMatchRows(database: Database.Database): void {
  const { rows, kept } = figures(database);
  const sinks = new Set(Object.keys({ ...rows, ...kept }).map((key) => key.split('/')[0] ?? ''));
  for (const sink of sinks) {
    expect(kept[`${sink}/delivered`] ?? 0).toBe((rows[`${sink}/delivered`] ?? 0) + (kept[`${sink}/pruned`] ?? 0));
    for (const status of ['pending', 'failed']) expect(kept[`${sink}/${status}`] ?? 0).toBe(rows[`${sink}/${status}`] ?? 0);
  }
}

function deliverDue(store: WebhookStore, sinkId: string, count: number): void {
  store.transaction(() => {
    for (const due of store.due(sinkId, count)) store.delivered(due, 200);
  });
}

describe('the store removes delivered deliveries past the retention', () => {
  it('oldest first, in batches, never a pending or failed one; the delivered count stays, the removed ones are tallied', () => {
    const { clock, store, append, db: database } = ledgerAt([
      { id: 'whk_a', url: 'http://127.0.0.1:9/a', secretPath: '/nonexistent/a' },
      { id: 'whk_b', url: 'http://127.0.0.1:9/b', secretPath: '/nonexistent/b' },
    ]);
    // Day 0: six events to both sinks. Sink a: three delivered that day, one failed for good, two
    // left pending; sink b: all six delivered that day.
    append(6);
    store.transaction(() => store.takeUp());
    deliverDue(store, 'whk_a', 3);
    const [failing] = store.due('whk_a', 1);
    if (failing === undefined) throw new Error('expected a due delivery');
    store.transaction(() => { store.retry(failing, { httpStatus: 500, error: 'http_status' }, null); });
    deliverDue(store, 'whk_b', 6);
    // Day 20: one more event, delivered to both at once.
    clock.now = T0 + 20 * DAY;
    append(1);
    store.transaction(() => store.takeUp());
    const [newest] = store.due('whk_a', 10).filter((due) => due.eventId === 7n);
    if (newest === undefined) throw new Error('expected event 7 due at sink a');
    store.transaction(() => { store.delivered(newest, 200); });
    deliverDue(store, 'whk_b', 1);

    const listed = () => Object.fromEntries(store.list().map((sink) => [sink.sink_id, sink.deliveries]));
    const before = listed();
    expect(before).toEqual({ whk_a: { delivered: 4, failed: 1, pending: 2 }, whk_b: { delivered: 7, failed: 0, pending: 0 } });
    const deliveredIds = () => (database.prepare("SELECT event_id FROM webhook_deliveries WHERE status = 'delivered' ORDER BY sink_id, event_id").all() as { event_id: bigint }[]).map((row) => Number(row.event_id));

    // Day 40 with a 30-day retention: everything delivered on day 0 is past it (9 rows), day 20's is not.
    clock.now = T0 + 40 * DAY;
    const cutoff = clock.now - 30 * DAY;
    expect(store.anyDeliveredBefore(cutoff)).toBe(true);
    expect(store.pruneDelivered(cutoff, 4)).toBe(4);
    expectCountsMatchRows(database);
    expect(store.pruneDelivered(cutoff, 4)).toBe(4);
    expect(store.pruneDelivered(cutoff, 4)).toBe(1);
    expect(store.pruneDelivered(cutoff, 4)).toBe(0);
    expect(store.anyDeliveredBefore(cutoff)).toBe(false);

    expect(deliveredIds()).toEqual([7, 7]);
    const { rows, kept } = figures(database);
    expect(rows).toEqual({ 'whk_a/delivered': 1, 'whk_a/failed': 1, 'whk_a/pending': 2, 'whk_b/delivered': 1 });
    expect(kept).toMatchObject({ 'whk_a/pruned': 3, 'whk_b/pruned': 6, 'whk_a/delivered': 4, 'whk_b/delivered': 7 });
    expectCountsMatchRows(database);
    // What `webhooks list` and the metrics counter read: every delivery ever delivered.
    expect(listed()).toEqual(before);
    // A failed delivery from day 0 and the pending ones stay, however old.
    expect(store.deliveries({ sinkId: 'whk_a', failed: true, limit: 10 })).toHaveLength(1);
  });

  it('removes the oldest first even when delivery order differs from the rows’ order', () => {
    const { clock, store, append, db: database } = ledgerAt([{ id: 'whk_a', url: 'http://127.0.0.1:9/a', secretPath: '/nonexistent/a' }]);
    append(3);
    store.transaction(() => store.takeUp());
    const due = store.due('whk_a', 3);
    // Event 3 delivered first (day 0), event 1 on day 5, event 2 on day 10.
    for (const [eventId, day] of [[3n, 0], [1n, 5], [2n, 10]] as const) {
      clock.now = T0 + day * DAY;
      const one = due.find((row) => row.eventId === eventId);
      if (one === undefined) throw new Error('expected the delivery');
      store.transaction(() => { store.delivered(one, 200); });
    }
    clock.now = T0 + 45 * DAY;
    expect(store.pruneDelivered(clock.now - 30 * DAY, 1)).toBe(1);
    const left = () => (database.prepare('SELECT event_id FROM webhook_deliveries ORDER BY event_id').all() as { event_id: bigint }[]).map((row) => Number(row.event_id));
    expect(left()).toEqual([1, 2]);
    expect(store.pruneDelivered(clock.now - 30 * DAY, 1)).toBe(1);
    expect(left()).toEqual([2]);
  });

  it('a removal rolled back leaves the rows and the counts as they were', () => {
    const { clock, store, append, db: database } = ledgerAt([{ id: 'whk_a', url: 'http://127.0.0.1:9/a', secretPath: '/nonexistent/a' }]);
    append(3);
    store.transaction(() => store.takeUp());
    deliverDue(store, 'whk_a', 3);
    clock.now = T0 + 31 * DAY;
    const before = figures(database);
    expect(() =>
      store.transaction(() => {
        store.pruneDelivered(clock.now - 30 * DAY, 10);
        throw new Error('rolled back');
      }),
    ).toThrow('rolled back');
    expect(figures(database)).toEqual(before);
    expect(store.pruneDelivered(clock.now - 30 * DAY, 10)).toBe(3);
    expectCountsMatchRows(database);
  });

  it('finds the aged rows through migration 19’s index, not by reading the delivered rows', () => {
    const { db: database } = ledgerAt([]);
    for (const [sql, parameters] of [[PRUNE_SQL.any, [0]], [PRUNE_SQL.aged, [0, 10]]] as const) {
      const plan = (database.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(...parameters) as { detail: string }[]).map((row) => row.detail).join('\n');
      expect(plan).toContain('webhook_deliveries_delivered_at');
      expect(plan).not.toMatch(/SCAN webhook_deliveries\b(?! USING)/);
      // The index gives the oldest first: no sort of every aged row for one batch.
      expect(plan).not.toContain('TEMP B-TREE');
    }
  });
});

describe('the delivery worker applies the retention', () => {
  async function sinkAt(name: string): Promise<{ id: string; url: string; secretPath: string }> {
    receiver ??= await startWebhookReceiver(200);
    const secretPath = join(dir, `${name}.secret`);
    await writeFile(secretPath, randomBytes(32).toString('hex'), { mode: 0o600 });
    return { id: `whk_${name}`, url: `${receiver.origin}/${name}`, secretPath };
  }
  function logLines() {
    const lines: Record<string, unknown>[] = [];
    const sink = new PassThrough();
    sink.on('data', (chunk: Buffer) => lines.push(...chunk.toString('utf8').split('\n').filter(Boolean).map((line) => JSON.parse(line) as Record<string, unknown>)));
    return { lines, logger: pino(sink) };
  }
  const deliveredRows = (database: Database.Database) => Number((database.prepare("SELECT COUNT(*) AS n FROM webhook_deliveries WHERE status = 'delivered'").get() as { n: bigint | number }).n);
  async function until(predicate: () => boolean, timeoutMs = 10_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!predicate()) {
      if (Date.now() > deadline) throw new Error('timed out');
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  }

  it('a worker started after the retention removes every aged row in batches of 500, in one pass said once in the log', async () => {
    const sink = await sinkAt('a');
    const { clock, store, append, db: database } = ledgerAt([sink]);
    const settings = { ...DEFAULT_WEBHOOK_DELIVERY, pollMs: 5, deliveredRetentionMs: 30 * DAY };
    delivery = startWebhookDelivery({ store, logger: pino({ level: 'silent' }), now: () => clock.now, settings });
    append(1_100);
    delivery.wake();
    await until(() => deliveredRows(database) === 1_100, 30_000);
    delivery.stop();

    // A month and a day later the ledger starts again; one event more is delivered then.
    clock.now = T0 + 31 * DAY;
    const { lines, logger } = logLines();
    const turns: number[] = [];
    const counted = { ...store, pruneDelivered: (before: number, limit: number) => { const removed = store.pruneDelivered(before, limit); turns.push(removed); return removed; } };
    delivery = startWebhookDelivery({ store: counted, logger, now: () => clock.now, settings });
    append(1);
    delivery.wake();
    await until(() => deliveredRows(database) === 1 && receiver?.received.length === 1_101);
    expect(turns).toEqual([500, 500, 100]);
    const passes = lines.filter((line) => line.event === 'webhook_deliveries_pruned');
    expect(passes).toEqual([expect.objectContaining({ removed: 1_100, retention_days: 30 })]);
    expect(store.list()[0]?.deliveries).toEqual({ delivered: 1_101, failed: 0, pending: 0 });
    expectCountsMatchRows(database);
  });

  it('a running worker removes rows as they age, a pass each interval', async () => {
    const sink = await sinkAt('b');
    const { clock, store, append, db: database } = ledgerAt([sink]);
    const settings = { ...DEFAULT_WEBHOOK_DELIVERY, pollMs: 5, deliveredRetentionMs: 7 * DAY, pruneIntervalMs: 50 };
    delivery = startWebhookDelivery({ store, logger: pino({ level: 'silent' }), now: () => clock.now, settings });
    append(3);
    delivery.wake();
    await until(() => deliveredRows(database) === 3);
    clock.now = T0 + 6 * DAY;
    append(2);
    delivery.wake();
    await until(() => deliveredRows(database) === 5);
    // Still within seven days of both: kept through several passes.
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(deliveredRows(database)).toBe(5);
    // Day 8: the first three have aged; the worker, not restarted, removes them.
    clock.now = T0 + 8 * DAY;
    await until(() => deliveredRows(database) === 2);
    expectCountsMatchRows(database);
    expect(figures(database).kept['whk_b/pruned']).toBe(3);
  });
});

describe('the retention setting', () => {
  const BUILD: BuildInfo = { product: 'lexec', product_version: 'v0.3.0', contract_version: 'v4.5', commit: 'a'.repeat(40), build_kind: 'development' };

  const profileIssues = (days: unknown) => sandboxWithLedgerSetting('webhook_delivered_retention_days', days);

  it('a profile’s [ledger] webhook_delivered_retention_days is rendered into the ledger configuration, and nothing when unset', async () => {
    const { profile } = await profileIssues(7);
    if (profile === null) throw new Error('expected the profile to parse');
    const paths = profilePaths('/home/operator/.lexec', 'sandbox');
    const rendered = renderGeneration({ profile, paths, build: BUILD, now: new Date('2026-11-01T00:00:00Z') });
    expect(JSON.parse(rendered.files['ledger.json'] ?? '')).toMatchObject({ webhook_delivery: { delivered_retention_days: 7 } });
    const plain = await parseProfile(toToml(exampleTable('sandbox')), 'profile.toml');
    const unset = renderGeneration({ profile: plain, paths, build: BUILD, now: new Date('2026-11-01T00:00:00Z') });
    expect(JSON.parse(unset.files['ledger.json'] ?? '')).not.toHaveProperty('webhook_delivery');
  });

  it('refuses 0, more than 3650, a fraction or a string with the path ledger.webhook_delivered_retention_days', async () => {
    for (const days of [0, 3651, 1.5, '30']) {
      const { issues } = await profileIssues(days);
      expect(issues.map((issue) => issue.path)).toEqual(['ledger.webhook_delivered_retention_days']);
    }
  });

  it('the ledger’s own configuration: webhook_delivery.delivered_retention_days, 30 by default, checked with its path', async () => {
    const path = join(dir, 'ledger.json');
    const config = ledgerConfig(dir, { webhook_delivery: { delivered_retention_days: 0 } });
    await writeFile(path, JSON.stringify(config));
    await expect(loadLedgerConfig(path)).rejects.toMatchObject({ code: 'config_invalid', issues: [{ path: 'webhook_delivery.delivered_retention_days' }] });
    await writeFile(path, JSON.stringify({ ...config, webhook_delivery: { timeout_ms: 5000 } }));
    expect((await loadLedgerConfig(path)).webhook_delivery?.delivered_retention_days).toBe(30);
    await writeFile(path, JSON.stringify({ ...config, webhook_delivery: { delivered_retention_days: 365 } }));
    expect((await loadLedgerConfig(path)).webhook_delivery).toMatchObject({ delivered_retention_days: 365, timeout_ms: 10_000 });
  });
});
