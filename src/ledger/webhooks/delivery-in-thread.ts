import type Database from 'better-sqlite3';
import { Worker } from 'node:worker_threads';
import type { Logger } from 'pino';
import { createWriteSignal, lowerSignal, yieldToSignal } from '../../storage/shared-write-lock.js';
import type { DeliveryThreadData } from './delivery-thread.js';
import type { WebhookDelivery, WebhookDeliverySettings } from './webhook-delivery.js';

const WAKE_INTERVAL_MS = 10;

/**
 * Runs the webhook delivery in a worker thread of its own (delivery-thread.ts): `ledger serve`'s
 * way, so delivering never shares the request handler's thread (docs/ledger.md "Webhooks",
 * docs/decisions.md). A wake asked inside an event's transaction reaches the thread only after
 * that transaction (a later turn of this thread's loop), so the thread never looks before the
 * commit. Stopping tells the thread to stop and close its connection; a thread that has died is
 * said in the log and started again by nothing — deliveries stay pending until the next start.
 */
export function startDeliveryThread(options: {
  readonly databasePath: string;
  /** The request thread's connection to the same database: its transactions take turns with the thread's (storage/shared-write-lock.ts). */
  readonly db: Database.Database;
  readonly settings: WebhookDeliverySettings;
  readonly logger: Logger;
}): WebhookDelivery {
  const writeSignal = createWriteSignal();
  yieldToSignal(options.db, writeSignal);
  const data: DeliveryThreadData = { databasePath: options.databasePath, settings: options.settings, writeSignal };
  const worker = new Worker(new URL('./delivery-thread.js', import.meta.url), { workerData: data });
  // The ledger's process ends when its server closes, whatever the thread is doing.
  worker.unref();
  let stopped = false;
  worker.on('error', (error: Error) => {
    options.logger.error({ event: 'webhook_delivery_thread_failed', error_class: error.name });
  });
  // A thread that ended mid-transaction leaves no lock behind (SQLite's ends with it) and must not leave the signal up.
  worker.on('exit', () => {
    lowerSignal(writeSignal);
  });
  // One message per WAKE_INTERVAL_MS at most: the thread takes up everything committed by then in
  // one turn anyway, and a message per commit would cost the requests' thread for nothing.
  let waking = false;
  let lastPost = -Infinity;
  const post = () => {
    waking = false;
    lastPost = performance.now();
    if (!stopped) worker.postMessage('wake');
  };
  return {
    wake() {
      if (waking || stopped) return;
      waking = true;
      const wait = lastPost + WAKE_INTERVAL_MS - performance.now();
      if (wait <= 0) setImmediate(post);
      else setTimeout(post, wait).unref();
    },
    stop() {
      if (stopped) return;
      stopped = true;
      worker.postMessage('stop');
    },
  };
}
