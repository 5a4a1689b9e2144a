import { setTimeout as sleep } from 'node:timers/promises';
import type { LedgerClient } from '../ledger/client/ledger-client.js';
import type { LedgerEvent } from '../ledger/wire/answers.js';
import { liveEventView, type LiveEventView } from './console-views.js';

/*
 * The console's live view of the ledger (docs/console.md "Live events"): one follower per console
 * process reads the ledger's events after its cursor by long-polls (`GET /events?wait_seconds=…`,
 * approver capability: the ledger answers as soon as an event is written, or after the wait)
 * while at least one browser tab listens, and passes each page to every listener (console-app.ts
 * streams them as Server-Sent Events). With them it passes how many requests wait for a human,
 * read again whenever events came and at least every `recountMs` (a request that expires writes
 * no event the count could follow yet).
 *
 * It starts at the ledger's latest event (a tab shows what happens from now on; the views show
 * what happened before) and keeps its cursor for the life of the process, so a tab that listens
 * again misses nothing in between. A stack that is down or restarting is tried again after
 * `retryMs`; the listeners are told it is unavailable. The last listener gone, the long-poll in
 * flight is abandoned (aborted) and nothing is read until the next one.
 */

export interface LiveMessage {
  readonly events: readonly LiveEventView[];
  /** Requests waiting for a human now; null when the stack did not answer. */
  readonly pending_approvals: number | null;
  readonly available: boolean;
}

export type LiveListener = (message: LiveMessage) => void;

export interface EventFollowerOptions {
  /** A ledger client with the approver capability, found afresh (the stack may have restarted). */
  readonly connect: () => Promise<LedgerClient>;
  /** How long one long-poll waits for an event (seconds, 1-30). */
  readonly waitSeconds?: number;
  /** How often the pending count is read again without events (ms). */
  readonly recountMs?: number;
  /** How long after a failed read the next one starts (ms). */
  readonly retryMs?: number;
}

export type EventFollower = ReturnType<typeof createEventFollower>;

const PAGE = 500;

export function createEventFollower(options: EventFollowerOptions) {
  const waitSeconds = options.waitSeconds ?? 10;
  const recountMs = options.recountMs ?? 10_000;
  const retryMs = options.retryMs ?? 1_000;
  const listeners = new Set<LiveListener>();
  let cursor: bigint | null = null;
  // The follow under way (null: none); aborting it ends its loop and its long-poll.
  let following: AbortController | null = null;
  let last: LiveMessage = { events: [], pending_approvals: null, available: false };
  let countedAt = 0;

  /** The latest event's id: pages to the end once (the route has no "latest"). */
  async function tip(ledger: LedgerClient, signal: AbortSignal): Promise<bigint> {
    let after = 0n;
    for (;;) {
      const page = await ledger.events({ after, limit: PAGE, signal });
      after = BigInt(page.next_after);
      if (!page.more) return after;
    }
  }

  function tell(message: LiveMessage): void {
    for (const listener of listeners) listener(message);
  }

  /** One read: a long-poll after the cursor (at once when `wait` is 0), then the pages that follow it at once. */
  async function read(ledger: LedgerClient, from: bigint, wait: number, signal: AbortSignal): Promise<{ events: LedgerEvent[]; next: bigint }> {
    const events: LedgerEvent[] = [];
    let after = from;
    for (let pages = 0; pages < 10; pages += 1) {
      const page = await ledger.events({ after, limit: PAGE, signal, ...(pages === 0 && wait > 0 ? { waitSeconds: wait } : {}) });
      events.push(...page.events);
      after = BigInt(page.next_after);
      if (!page.more) break;
    }
    return { events, next: after };
  }

  async function follow(signal: AbortSignal): Promise<void> {
    // The first read of a follow, and the first after a failure, answers at once and counts afresh:
    // a tab that just subscribed gets the count as it is now, not as the last follow left it.
    let fresh = true;
    // Read afresh after each wait (a listener may have left meanwhile).
    const abandoned = (): boolean => signal.aborted;
    while (!abandoned()) {
      try {
        const ledger = await options.connect();
        const from = cursor ?? (await tip(ledger, signal));
        const { events, next } = await read(ledger, from, fresh ? 0 : waitSeconds, signal);
        const now = Date.now();
        let pending = last.pending_approvals;
        if (fresh || events.length > 0 || pending === null || !last.available || now - countedAt >= recountMs) {
          pending = (await ledger.pendingApprovals()).length;
          countedAt = now;
        }
        // Abandoned meanwhile: another follow may have started; this one changes nothing more.
        if (abandoned()) return;
        fresh = false;
        cursor = next;
        const changed = events.length > 0 || pending !== last.pending_approvals || !last.available;
        last = { events: events.map(liveEventView), pending_approvals: pending, available: true };
        if (changed) tell(last);
      } catch {
        if (abandoned()) return;
        fresh = true;
        const wasAvailable = last.available;
        last = { events: [], pending_approvals: null, available: false };
        if (wasAvailable) tell(last);
        try {
          await sleep(retryMs, undefined, { signal });
        } catch {
          return;
        }
      }
    }
  }

  function stopFollowing(): void {
    following?.abort();
    following = null;
  }

  return {
    /** Listens from now on; the listener first gets the latest count (no events). Returns the way to stop listening. */
    subscribe(listener: LiveListener): () => void {
      listeners.add(listener);
      if (last.available) listener({ ...last, events: [] });
      if (following === null) {
        const controller = new AbortController();
        following = controller;
        void follow(controller.signal);
      }
      return () => {
        listeners.delete(listener);
        if (listeners.size === 0) stopFollowing();
      };
    },
    close(): void {
      listeners.clear();
      stopFollowing();
    },
  };
}
