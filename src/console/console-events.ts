import type { LedgerClient } from '../ledger/client/ledger-client.js';
import type { LedgerEvent } from '../ledger/wire/answers.js';
import { liveEventView, type LiveEventView } from './console-views.js';

/*
 * The console's live view of the ledger (docs/console.md "Live events"): one follower per console
 * process reads the ledger's events after its cursor (`GET /events`, approver capability) about
 * every second while at least one browser tab listens, and passes each page to every listener
 * (console-app.ts streams them as Server-Sent Events). With them it passes how many requests wait
 * for a human, read again whenever events came and at least every 10 s (a request that expires
 * writes no event the count could follow yet).
 *
 * It starts at the ledger's latest event (a tab shows what happens from now on; the views show
 * what happened before) and keeps its cursor for the life of the process, so a tab that listens
 * again misses nothing in between. A stack that is down is tried again at the next tick; the
 * listeners are told it is unavailable.
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
  readonly intervalMs?: number;
  /** How often the pending count is read again without events (ms). */
  readonly recountMs?: number;
}

export type EventFollower = ReturnType<typeof createEventFollower>;

const PAGE = 500;

export function createEventFollower(options: EventFollowerOptions) {
  const intervalMs = options.intervalMs ?? 1_000;
  const recountMs = options.recountMs ?? 10_000;
  const listeners = new Set<LiveListener>();
  let cursor: bigint | null = null;
  let timer: NodeJS.Timeout | null = null;
  let running = false;
  let last: LiveMessage = { events: [], pending_approvals: null, available: false };
  let countedAt = 0;

  /** The latest event's id: pages to the end once (the route has no "latest"). */
  async function tip(ledger: LedgerClient): Promise<bigint> {
    let after = 0n;
    for (;;) {
      const page = await ledger.events({ after, limit: PAGE });
      after = BigInt(page.next_after);
      if (!page.more) return after;
    }
  }

  async function tick(): Promise<void> {
    if (running) return;
    running = true;
    try {
      const ledger = await options.connect();
      if (cursor === null) cursor = await tip(ledger);
      const events: LedgerEvent[] = [];
      for (let pages = 0; pages < 10; pages += 1) {
        const page = await ledger.events({ after: cursor, limit: PAGE });
        events.push(...page.events);
        cursor = BigInt(page.next_after);
        if (!page.more) break;
      }
      const now = Date.now();
      let pending = last.pending_approvals;
      if (events.length > 0 || pending === null || !last.available || now - countedAt >= recountMs) {
        pending = (await ledger.pendingApprovals()).length;
        countedAt = now;
      }
      const changed = events.length > 0 || pending !== last.pending_approvals || !last.available;
      last = { events: events.map(liveEventView), pending_approvals: pending, available: true };
      if (changed) for (const listener of listeners) listener(last);
    } catch {
      const wasAvailable = last.available;
      last = { events: [], pending_approvals: null, available: false };
      if (wasAvailable) for (const listener of listeners) listener(last);
    } finally {
      running = false;
    }
  }

  function schedule(): void {
    if (timer !== null || listeners.size === 0) return;
    timer = setInterval(() => void tick(), intervalMs);
    timer.unref();
  }

  return {
    /** Listens from now on; the listener first gets the latest count (no events). Returns the way to stop listening. */
    subscribe(listener: LiveListener): () => void {
      listeners.add(listener);
      schedule();
      if (last.available) listener({ ...last, events: [] });
      else void tick();
      return () => {
        listeners.delete(listener);
        if (listeners.size === 0 && timer !== null) {
          clearInterval(timer);
          timer = null;
        }
      };
    },
    close(): void {
      listeners.clear();
      if (timer !== null) clearInterval(timer);
      timer = null;
    },
  };
}
