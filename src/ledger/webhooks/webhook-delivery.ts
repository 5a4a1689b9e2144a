import type { Logger } from 'pino';
import { bigintAsString } from '../../domain/canonical-json.js';
import type { DueDelivery, WebhookSinkTarget, WebhookStore } from '../store/webhook-store.js';
import { SIGNATURE_HEADER, webhookSignature } from './webhook-signature.js';
import { createWebhookPoster, WebhookTimeout } from './webhook-post.js';
import { createSecretFileCache } from './webhook-secret-file.js';
import { redactedWebhookUrl } from './webhook-url.js';
import { slackMessage } from './slack-message.js';

/*
 * The ledger's webhook delivery (docs/ledger.md "Webhooks"): runs in the ledger process beside
 * request handling, never inside it. A request's only part is the event row its transaction
 * writes; the event store then wakes this worker (after the commit: the wake runs on a later turn
 * of the event loop), which also looks every `pollMs` on its own (retries fall due, events a part
 * of the ledger wrote without waking it).
 *
 * Each turn: take up the events after every live sink's cursor into pending deliveries (one
 * transaction), then start the due deliveries, at most `concurrencyPerSink` at a time per sink.
 * A delivery is POSTed with a timeout; a 2xx marks it delivered (only then: at-least-once). Any
 * other answer, no answer, or a secret file that cannot be read is retried after an exponential,
 * capped, jittered delay, until `giveUpAfterMs` after the event: then it is failed. A ledger
 * killed mid-delivery finds its deliveries still pending when it starts again and sends them
 * again; the receiver tells a repeat by `x-lexec-event-id`.
 */

export interface WebhookDeliverySettings {
  /** How long one POST may take before it counts as failed. */
  readonly timeoutMs: number;
  /** The delay before the first retry; doubled after each failed attempt … */
  readonly firstRetryMs: number;
  /** … up to this. */
  readonly maxRetryMs: number;
  /** How many deliveries of one sink may be in flight at once. */
  readonly concurrencyPerSink: number;
  /** How often the worker looks without being woken. */
  readonly pollMs: number;
  /** Retries end this long after the event. */
  readonly giveUpAfterMs: number;
  /** A delivered delivery's row is removed this long after its delivery (pending and failed ones are kept) … */
  readonly deliveredRetentionMs: number;
  /** … by a pass this often (the first at the worker's first turn). */
  readonly pruneIntervalMs: number;
}

export const DEFAULT_WEBHOOK_DELIVERY: WebhookDeliverySettings = {
  timeoutMs: 10_000,
  firstRetryMs: 1_000,
  maxRetryMs: 3_600_000,
  concurrencyPerSink: 8,
  pollMs: 250,
  giveUpAfterMs: 24 * 3_600_000,
  deliveredRetentionMs: 30 * 24 * 3_600_000,
  pruneIntervalMs: 60_000,
};

/**
 * At most one turn (one commit) per this many ms. Each turn's commit is a write the request thread
 * waits for (storage/shared-write-lock.ts): 50 ms kept the ledger's cycle rate at what it was with
 * a starved delivery thread and commit → receipt at p50 30 ms, p95 49 ms (docs/benchmarks.md);
 * 25 ms cost the requests 5-8%.
 */
const MIN_TURN_INTERVAL_MS = 50;
/** How many due deliveries of a sink a turn queues in memory, started as the sink's slots free up between turns. */
const QUEUED_PER_SINK = 256;
/** How many event bodies the worker keeps made (an event goes to every sink that takes it). */
const MAX_BODIES = 2_048;
/** How many delivered deliveries past the retention a turn removes at most (in its transaction), the oldest first; a full batch is followed by another the next turn. */
const PRUNE_BATCH = 500;

export interface WebhookDeliveryOptions {
  readonly store: WebhookStore;
  readonly logger: Logger;
  readonly now: () => number;
  readonly settings: WebhookDeliverySettings;
  /** [0, 1): the jitter's randomness (tests may fix it). */
  readonly random?: () => number;
}

export interface WebhookDelivery {
  /** Looks for new events and due deliveries soon (after the current turn: after the commit that called it). */
  wake: () => void;
  /** Stops taking up and starting deliveries and aborts those in flight: they stay pending, nothing more is written (the database may close right after). */
  stop: () => void;
}

/** How one attempt went, as it is recorded: a status code and an error class, never a body. */
interface Outcome {
  readonly delivered: boolean;
  readonly httpStatus: number | null;
  readonly error: 'http_status' | 'timeout' | 'connection_refused' | 'connection_failed' | 'secret_file_unreadable' | null;
}

function failureClass(error: unknown): Outcome['error'] {
  if (error instanceof WebhookTimeout) return 'timeout';
  const failed = error as { code?: unknown; cause?: { code?: unknown } } | null;
  return failed?.code === 'ECONNREFUSED' || failed?.cause?.code === 'ECONNREFUSED' ? 'connection_refused' : 'connection_failed';
}

/** The delay before the next attempt after `attempts` failed ones: doubled each time, capped, with half of it random ("equal jitter"). */
export function retryDelayMs(attempts: number, settings: Pick<WebhookDeliverySettings, 'firstRetryMs' | 'maxRetryMs'>, random: () => number): number {
  const full = Math.min(settings.maxRetryMs, settings.firstRetryMs * 2 ** Math.min(Math.max(attempts - 1, 0), 30));
  return Math.round(full / 2 + (random() * full) / 2);
}

export function startWebhookDelivery(options: WebhookDeliveryOptions): WebhookDelivery {
  const { store, logger, now, settings } = options;
  const random = options.random ?? Math.random;
  const poster = createWebhookPoster();
  const secrets = createSecretFileCache();
  const inFlight = new Set<bigint>();
  const perSink = new Map<string, number>();
  // Each sink's due deliveries as the last turn read them: started as its slots free up, without waiting for the next turn.
  const queued = new Map<string, { readonly sink: WebhookSinkTarget; readonly deliveries: DueDelivery[] }>();
  const finished: { sink: WebhookSinkTarget; delivery: DueDelivery; outcome: Outcome }[] = [];
  let woken = false;
  let stopped = false;
  let lastTurn = 0;
  // Counts turns: the secret file cache looks at each file at most once per turn.
  let turns = 0;
  // When the next turn removes delivered deliveries past the retention (performance.now(); the first turn does), and how many this pass has removed.
  let nextPrune = 0;
  let prunedInPass = 0;

  // The bodies of the events being delivered, made once for every sink of the same format (an
  // event's row never changes); forgotten whenever nothing is in flight, and bounded meanwhile.
  const bodies = new Map<string, { text: string; type: string }>();

  function body(sink: WebhookSinkTarget, delivery: DueDelivery): { text: string; type: string } {
    const key = `${sink.format}:${delivery.eventId.toString()}`;
    const known = bodies.get(key);
    if (known !== undefined) return known;
    const event = delivery.event;
    // `lexec`: the event exactly as GET /events shows it (the same serialisation as the ledger's answers).
    const text = sink.format === 'slack' ? JSON.stringify(slackMessage(event)) : JSON.stringify(event, bigintAsString);
    const made = { text, type: event.type };
    bodies.set(key, made);
    return made;
  }

  async function post(sink: WebhookSinkTarget, delivery: DueDelivery): Promise<Outcome> {
    const made = body(sink, delivery);
    // Read now, not when the sink was added: a rotated secret signs the next delivery.
    const secret = await secrets.read(sink.secretPath, turns);
    if (!secret.ok) return { delivered: false, httpStatus: null, error: 'secret_file_unreadable' };
    try {
      const headers = {
        'content-type': 'application/json',
        'x-lexec-event-id': delivery.eventId.toString(),
        'x-lexec-event-type': made.type,
        [SIGNATURE_HEADER]: webhookSignature(secret.secret, made.text, Math.floor(Date.now() / 1000)),
      };
      const status = await poster.post(sink.url, headers, made.text, settings.timeoutMs);
      const ok = status >= 200 && status < 300;
      return { delivered: ok, httpStatus: status, error: ok ? null : 'http_status' };
    } catch (error) {
      return { delivered: false, httpStatus: null, error: failureClass(error) };
    }
  }

  /** Records one attempt's outcome (inside the turn's transaction). */
  function record(sink: WebhookSinkTarget, delivery: DueDelivery, outcome: Outcome): void {
    if (outcome.delivered) {
      store.delivered(delivery, outcome.httpStatus ?? 200);
      return;
    }
    const attempts = delivery.attempts + 1;
    const eventAt = Date.parse(delivery.event.at);
    const next = now() + retryDelayMs(attempts, settings, random);
    const giveUp = next > eventAt + settings.giveUpAfterMs;
    store.retry(delivery, { httpStatus: outcome.httpStatus, error: outcome.error ?? 'connection_failed' }, giveUp ? null : next);
    // The origin only: a webhook URL's path may be its credential.
    const line = {
      event: giveUp ? 'webhook_delivery_failed' : 'webhook_delivery_retry',
      sink_id: sink.sinkId,
      url: redactedWebhookUrl(sink.url),
      event_id: delivery.eventId.toString(),
      attempts,
      error_class: outcome.error,
      http_status: outcome.httpStatus,
    };
    if (giveUp) logger.warn(line);
    else logger.info(line);
  }

  async function attempt(sink: WebhookSinkTarget, delivery: DueDelivery): Promise<void> {
    const outcome = await post(sink, delivery);
    // Stopped meanwhile (the database may be closing): the delivery stays pending, sent again after a start.
    if (stopped) return;
    // Recorded by the next turn, with the others that ended meanwhile: one commit for all.
    finished.push({ sink, delivery, outcome });
  }

  function start(sink: WebhookSinkTarget, delivery: DueDelivery): void {
    perSink.set(sink.sinkId, (perSink.get(sink.sinkId) ?? 0) + 1);
    inFlight.add(delivery.deliveryId);
    void attempt(sink, delivery)
      .catch((error: unknown) => {
        if (stopped) return;
        logger.error({ event: 'webhook_delivery_error', sink_id: sink.sinkId, event_id: delivery.eventId.toString(), error_class: error instanceof Error ? error.name : 'unknown' });
        // Counted as a failed attempt: retried later like any other.
        finished.push({ sink, delivery, outcome: { delivered: false, httpStatus: null, error: 'connection_failed' } });
      })
      .finally(() => {
        // The sink's slot is free now: the next queued delivery goes at once. This one stays in
        // flight until its outcome is recorded (the next turn), so it is never started twice.
        perSink.set(sink.sinkId, (perSink.get(sink.sinkId) ?? 1) - 1);
        startQueued(sink.sinkId);
        wake();
      });
  }

  /** Starts the sink's queued deliveries while it has free slots (skipping any in flight). */
  function startQueued(sinkId: string): void {
    const queue = queued.get(sinkId);
    if (queue === undefined) return;
    while (!stopped && (perSink.get(sinkId) ?? 0) < settings.concurrencyPerSink) {
      const delivery = queue.deliveries.shift();
      if (delivery === undefined) return;
      if (!inFlight.has(delivery.deliveryId)) start(queue.sink, delivery);
    }
  }

  function turn(): void {
    woken = false;
    if (stopped) return;
    lastTurn = performance.now();
    turns += 1;
    // The outcomes that came in and the events written since the last turn, in one commit — and
    // no write transaction at all when there is neither (the ledger's requests never wait for it).
    const outcomes = finished.splice(0);
    try {
      let more = false;
      // Delivered deliveries past the retention, when a pass is due: looked for with a read first,
      // so a pass with nothing to remove takes no write lock either.
      let pruneBefore: number | null = null;
      if (lastTurn >= nextPrune) {
        const before = now() - settings.deliveredRetentionMs;
        if (store.anyDeliveredBefore(before)) pruneBefore = before;
        else afterPrune(0);
      }
      if (outcomes.length > 0 || pruneBefore !== null || store.behind()) {
        let pruned = 0;
        try {
          more = store.transaction(() => {
            for (const { sink, delivery, outcome } of outcomes) record(sink, delivery, outcome);
            if (pruneBefore !== null) pruned = store.pruneDelivered(pruneBefore, PRUNE_BATCH);
            return store.takeUp();
          });
        } catch (error) {
          // Nothing was recorded: the outcomes wait for the next turn (their deliveries stay in flight meanwhile).
          finished.unshift(...outcomes);
          throw error;
        }
        if (pruneBefore !== null && afterPrune(pruned)) more = true;
      }
      for (const { delivery } of outcomes) inFlight.delete(delivery.deliveryId);
      if (inFlight.size === 0 || bodies.size > MAX_BODIES) bodies.clear();
      // Each live sink's due deliveries, read afresh (what the last turn queued may have been recorded since).
      queued.clear();
      for (const sink of store.targets()) {
        // A sink with no free slot starts nothing before one frees (which wakes a turn): its due
        // deliveries are not read now (a hanging sink keeps every slot taken for a long time).
        if ((perSink.get(sink.sinkId) ?? 0) >= settings.concurrencyPerSink) continue;
        const deliveries = store.due(sink.sinkId, QUEUED_PER_SINK + inFlight.size).filter((delivery) => !inFlight.has(delivery.deliveryId));
        queued.set(sink.sinkId, { sink, deliveries });
        startQueued(sink.sinkId);
      }
      if (more) wake();
    } catch (error) {
      // A busy or failing database: the next poll tries again; requests are not affected.
      logger.error({ event: 'webhook_delivery_error', error_class: error instanceof Error ? error.name : 'unknown' });
    }
  }

  /**
   * After a turn removed `pruned` deliveries: answers whether another batch follows the next turn
   * (this one was full); otherwise the pass ends, said in the log when it removed any.
   */
  function afterPrune(pruned: number): boolean {
    prunedInPass += pruned;
    if (pruned === PRUNE_BATCH) return true;
    nextPrune = lastTurn + settings.pruneIntervalMs;
    if (prunedInPass > 0) logger.info({ event: 'webhook_deliveries_pruned', removed: prunedInPass, retention_days: settings.deliveredRetentionMs / 86_400_000 });
    prunedInPass = 0;
    return false;
  }

  // At most one turn (one commit) per MIN_TURN_INTERVAL_MS: under load, a turn takes up the events
  // and records the outcomes of many requests at once instead of committing for each.
  function wake(): void {
    if (woken || stopped) return;
    woken = true;
    const wait = lastTurn + MIN_TURN_INTERVAL_MS - performance.now();
    if (wait <= 0) setImmediate(turn);
    else setTimeout(turn, wait);
  }

  const poll = setInterval(wake, settings.pollMs);
  poll.unref();
  wake();

  return {
    wake,
    stop() {
      stopped = true;
      clearInterval(poll);
      poster.close();
    },
  };
}
