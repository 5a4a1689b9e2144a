import { parentPort, workerData } from 'node:worker_threads';
import { pino } from 'pino';
import { openDatabase } from '../../storage/open-database.js';
import { pollingImmediateTransaction } from '../../storage/shared-write-lock.js';
import { LEDGER_MIGRATIONS } from '../store/migrations.js';
import { createWebhookStore } from '../store/webhook-store.js';
import { startWebhookDelivery, type WebhookDeliverySettings } from './webhook-delivery.js';

/*
 * The webhook worker's thread (`ledger serve`; delivery-in-thread.ts starts it): the same
 * delivery (webhook-delivery.ts) on its own connection to the ledger's database and its own event
 * loop, so a delivery's work — reading the event, signing, the POST and its answer, recording it —
 * never waits in line with a request's, and a sink that answers slowly or never costs the
 * requests nothing. Its log lines go to stderr like the ledger's own. Messages from the ledger's
 * thread: `wake` (an event was committed), `stop` (abort what is in flight — it stays pending —
 * close the database, exit).
 */

export interface DeliveryThreadData {
  readonly databasePath: string;
  readonly settings: WebhookDeliverySettings;
  /** Up while this thread holds the database's write lock (storage/shared-write-lock.ts). */
  readonly writeSignal: SharedArrayBuffer;
}

const data = workerData as DeliveryThreadData;
const port = parentPort;
if (port === null) throw new Error('delivery-thread.js runs as a worker thread of `ledger serve`');

const logger = pino({ base: { service: 'ledger' }, timestamp: pino.stdTimeFunctions.isoTime }, pino.destination({ dest: 2, sync: true }));
// Already migrated by the ledger's thread before this one starts: opening checks it, changes nothing.
const db = openDatabase(data.databasePath, LEDGER_MIGRATIONS);
// This connection writes only delivery bookkeeping (cursors, attempts, outcomes), so its commits
// skip the fsync (WAL, synchronous=NORMAL): they hold the write lock the ledger's requests need
// for less time. Power lost before the next synced commit can undo its last take-ups and
// outcomes together — those events are taken up and delivered again (at-least-once, as after a
// crash) — and never a money record: the ledger's own connection stays synchronous=FULL.
db.pragma('synchronous = NORMAL');
// The request thread holds the write lock most of the time under load: this thread asks for it
// again every quarter millisecond instead of SQLite's growing sleeps, which let it starve, and
// signals the request thread while it holds it (storage/shared-write-lock.ts). Its reads take no lock (WAL).
const turnTransaction = pollingImmediateTransaction(db, { pollMs: 0.25, timeoutMs: 5_000, signal: data.writeSignal });
const now = () => Date.now();
const delivery = startWebhookDelivery({ store: createWebhookStore(db, now, { turnTransaction }), logger, now, settings: data.settings });

port.on('message', (message: unknown) => {
  if (message === 'wake') delivery.wake();
  if (message === 'stop') {
    delivery.stop();
    db.close();
    port.close();
  }
});
