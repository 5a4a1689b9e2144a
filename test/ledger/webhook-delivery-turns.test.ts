import { randomBytes } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createEventStore } from '../../src/ledger/store/event-store.js';
import { LEDGER_MIGRATIONS } from '../../src/ledger/store/migrations.js';
import { createWebhookStore } from '../../src/ledger/store/webhook-store.js';
import { DEFAULT_WEBHOOK_DELIVERY, startWebhookDelivery, type WebhookDelivery } from '../../src/ledger/webhooks/webhook-delivery.js';
import { verifyWebhookSignature } from '../../src/ledger/webhooks/webhook-signature.js';
import { openDatabase } from '../../src/storage/open-database.js';
import { makeTempDir, removeDir } from '../support/cli.js';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver.js';

/*
 * The delivery worker's turns (issue 28's rate target): a turn with no outcome to record and no
 * event to take up opens no write transaction — the worker polls every `pollMs`, and each write
 * transaction would take the write lock the ledger's requests need — and one event going to two
 * sinks of the same format is made into its body once and reaches both, each signed with its own
 * sink's secret. A real SQLite file, a real loopback receiver.
 */

let dir: string;
let receiver: WebhookReceiver;
let delivery: WebhookDelivery | undefined;
beforeEach(async () => {
  dir = await makeTempDir('lexec-webhook-turns-');
  receiver = await startWebhookReceiver(200);
});
afterEach(async () => {
  delivery?.stop();
  await receiver.close();
  await removeDir(dir);
});

describe('the delivery worker', () => {
  it('takes no write lock while idle, and delivers a new event to both sinks with their own secrets', async () => {
    const db = openDatabase(join(dir, 'ledger.db'), LEDGER_MIGRATIONS);
    const now = () => Date.now();
    const store = createWebhookStore(db, now);
    let transactions = 0;
    const counted = { ...store, transaction: <T>(fn: () => T): T => { transactions += 1; return store.transaction(fn); } };
    const secrets: string[] = [];
    for (const name of ['a', 'b']) {
      const secret = randomBytes(32).toString('hex');
      const path = join(dir, `${name}.secret`);
      await writeFile(path, secret, { mode: 0o600 });
      secrets.push(secret);
      db.prepare(
        `INSERT INTO webhook_sinks (sink_id, url, format, event_types, secret_path, created_at, removed_at, cursor_event_id)
         VALUES (?, ?, 'lexec', NULL, ?, ?, NULL, 0)`,
      ).run(`whk_${name}`, `${receiver.origin}/${name}`, path, now());
    }
    delivery = startWebhookDelivery({ store: counted, logger: pino({ level: 'silent' }), now, settings: { ...DEFAULT_WEBHOOK_DELIVERY, pollMs: 5 } });
    // Dozens of polls with nothing to do.
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(transactions).toBe(0);

    const events = createEventStore(db);
    db.transaction(() => {
      events.append({ type: 'agent.suspended', at: now(), agentId: null, details: {} });
    }).immediate();
    delivery.wake();
    await receiver.until((received) => received.length === 2, 10_000);
    expect(transactions).toBeGreaterThan(0);
    const byPath = new Map(receiver.received.map((hook) => [hook.path, hook]));
    expect([...byPath.keys()].sort()).toEqual(['/a', '/b']);
    const [a, b] = [byPath.get('/a'), byPath.get('/b')];
    expect(a?.body).toBe(b?.body);
    const at = Math.floor(Date.now() / 1000);
    expect(verifyWebhookSignature(secrets[0] ?? '', a?.body ?? '', String(a?.headers['x-lexec-signature']), at)).toBe(true);
    expect(verifyWebhookSignature(secrets[1] ?? '', b?.body ?? '', String(b?.headers['x-lexec-signature']), at)).toBe(true);
    expect(verifyWebhookSignature(secrets[0] ?? '', b?.body ?? '', String(b?.headers['x-lexec-signature']), at)).toBe(false);
    expect(JSON.parse(a?.body ?? '{}')).toMatchObject({ type: 'agent.suspended' });
    delivery.stop();
    delivery = undefined;
    db.close();
  });
});
