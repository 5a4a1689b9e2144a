/*
 * How `GET /events?wait_seconds=` waits for the next event without blocking the event loop or
 * spinning (docs/ledger.md "Events"). The ledger's own event store signals `appended()` as it
 * appends (inside the change's transaction: better-sqlite3 is synchronous, so a woken waiter runs
 * only after the commit, or finds nothing new after a rollback and waits again). Another process
 * may write the same database file, so while anyone waits, one slow poll of the latest event id
 * (a primary-key lookup) wakes them too. `close()` — when the ledger stops — answers every waiter
 * at once and every later wait without waiting.
 */

export interface EventWaiters {
  /** Waits until an event after `seen` (an event id) may exist, `ms` have passed, `signal` aborts, or the waiters close. */
  waitAfter(seen: bigint, ms: number, signal?: AbortSignal): Promise<void>;
  /** The ledger's store appended an event (its transaction commits before any waiter runs). */
  appended(): void;
  /** Answers every waiter now and later ones at once. */
  close(): void;
  /** Whether close() was called. */
  readonly closed: () => boolean;
}

export interface EventWaitersOptions {
  /** The latest event id in the database (0 when none). */
  readonly lastId: () => bigint;
  /** How often the latest id is read while anyone waits (another process's events). */
  readonly pollMs: number;
}

export function createEventWaiters(options: EventWaitersOptions): EventWaiters {
  const waiting = new Set<{ seen: bigint; wake: () => void }>();
  let closed = false;
  let poll: NodeJS.Timeout | undefined;

  function wakeAll(): void {
    for (const waiter of [...waiting]) waiter.wake();
  }

  function stopPolling(): void {
    if (poll !== undefined && waiting.size === 0) {
      clearInterval(poll);
      poll = undefined;
    }
  }

  function startPolling(): void {
    poll ??= setInterval(() => {
      let last: bigint;
      try {
        last = options.lastId();
      } catch {
        // The database is busy or closing: the next poll, the deadline or close() answers.
        return;
      }
      for (const waiter of [...waiting]) if (last > waiter.seen) waiter.wake();
    }, options.pollMs);
  }

  return {
    waitAfter(seen, ms, signal) {
      if (closed || ms <= 0 || signal?.aborted === true) return Promise.resolve();
      return new Promise<void>((resolve) => {
        const waiter = {
          seen,
          wake: () => {
            clearTimeout(deadline);
            signal?.removeEventListener('abort', waiter.wake);
            waiting.delete(waiter);
            stopPolling();
            resolve();
          },
        };
        const deadline = setTimeout(waiter.wake, ms);
        signal?.addEventListener('abort', waiter.wake, { once: true });
        waiting.add(waiter);
        startPolling();
      });
    },
    appended: wakeAll,
    close() {
      closed = true;
      wakeAll();
    },
    closed: () => closed,
  };
}
