/*
 * Repeated identical rejections, collapsed (docs/stack-logs.md "Repeated rejections"). A managed
 * log is bounded (10 MiB + 4 generations), so one line per refused request let an
 * unauthenticated flood of 401s rotate away every line an operator needs within a minute or two.
 * Here each key of identical rejections has a window of `intervalMs` from its first occurrence:
 * that first one is logged in full by the caller, the rest are only counted, and one summary
 * line says how many when the window ends. Every rejection is thereby either its own line or
 * counted in exactly one summary, and a flood costs two lines per key and interval.
 *
 * Pure apart from the injected clock and timers: it logs nothing itself (`write` does).
 */

/** A `setTimeout`-like port (the shape of the readiness monitor's TimerPort), so tests drive time. */
export interface SummaryTimers {
  setTimeout(callback: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

/** When windows end and how time is read: the default for serve, a fake clock in tests. */
export interface RejectionSummaryTiming {
  readonly intervalMs: number;
  readonly clock: { now(): number };
  readonly timers: SummaryTimers;
}

/**
 * What makes two rejections identical: a few fields the server chose (method, route template,
 * status, error code…), never anything the caller wrote (no URL, header or body values).
 */
export type RejectionKey = Readonly<Record<string, string | number>>;

export interface RejectionSummariserOptions {
  /** The summary line's `event`. */
  readonly event: string;
  readonly timing: RejectionSummaryTiming;
  /** Writes one summary line (the caller's logger). */
  readonly write: (summary: Record<string, unknown>) => void;
  /**
   * Whether the first rejection of each window is the caller's to log in full (default). False:
   * every rejection is counted, for a caller that logs the first occurrence by another rule.
   */
  readonly logFirst?: boolean;
  /** Most keys tracked at once (default MAX_SUMMARY_KEYS); the rest share one `untracked` key. */
  readonly maxKeys?: number;
}

export interface RejectionSummariser {
  /** Records one rejection: `log` when the caller logs it in full, `counted` when a summary will count it. */
  observe(key: RejectionKey): 'log' | 'counted';
  /** Writes every pending summary now and stops the timer; later rejections are all `log`. Idempotent. */
  close(): void;
}

/**
 * Whether an answer is a rejection of the request, collapsed when repeated: every 4xx. A 5xx is
 * the server's own failure and a success is work done; both keep one line each.
 */
export function isRejection(status: number): boolean {
  return status >= 400 && status < 500;
}

/** A window's length unless a composition root says otherwise. */
export const REJECTION_SUMMARY_INTERVAL_MS = 60_000;
/**
 * Keys tracked at once. The cap bounds the log, not only memory: an unauthenticated caller can
 * still pick among the keys it can reach (about 30 HTTP methods on unmatched paths, each
 * route's 401, 413 and 415), and each key costs up to two lines an interval. With 32 keys and
 * the shared `untracked` one, a flood however varied writes at most 66 lines a minute (about
 * 20 MB a day), so a managed log's 50 MiB keeps days of history; a server's genuine rejections
 * use a handful of keys.
 */
export const MAX_SUMMARY_KEYS = 32;
/** The key that rejections beyond the cap share. */
export const UNTRACKED_KEY: RejectionKey = { untracked: 'keys_beyond_cap' };

interface Window {
  readonly key: RejectionKey;
  readonly startedAt: number;
  count: number;
  firstAt: number;
  lastAt: number;
}

/** Timers that never keep a process alive: a summary due is no reason to stay up. */
export function systemSummaryTiming(intervalMs = REJECTION_SUMMARY_INTERVAL_MS): RejectionSummaryTiming {
  return {
    intervalMs,
    clock: Date,
    timers: {
      setTimeout: (callback, ms) => setTimeout(callback, ms).unref(),
      clearTimeout: (handle) => {
        clearTimeout(handle as NodeJS.Timeout);
      },
    },
  };
}

export function createRejectionSummariser(options: RejectionSummariserOptions): RejectionSummariser {
  const { intervalMs, clock, timers } = options.timing;
  const logFirst = options.logFirst ?? true;
  const maxKeys = options.maxKeys ?? MAX_SUMMARY_KEYS;
  const windows = new Map<string, Window>();
  const untrackedId = JSON.stringify(Object.entries(UNTRACKED_KEY));
  let timer: unknown;
  let closed = false;

  function summarise(window: Window): void {
    if (window.count === 0) return;
    options.write({
      event: options.event,
      ...window.key,
      count: window.count,
      first_at: new Date(window.firstAt).toISOString(),
      last_at: new Date(window.lastAt).toISOString(),
      interval_ms: intervalMs,
    });
  }

  /** Ends every window that is over (all of them with `all`), writing their summaries. */
  function sweep(now: number, all: boolean): void {
    for (const [id, window] of windows) {
      if (!all && now - window.startedAt < intervalMs) continue;
      windows.delete(id);
      summarise(window);
    }
  }

  /** One timer for the earliest window end, so a flood that stops is still summarised. */
  function arm(now: number): void {
    if (closed || timer !== undefined || windows.size === 0) return;
    let earliest = Infinity;
    for (const window of windows.values()) earliest = Math.min(earliest, window.startedAt + intervalMs);
    timer = timers.setTimeout(
      () => {
        timer = undefined;
        const at = clock.now();
        sweep(at, false);
        arm(at);
      },
      Math.max(1, earliest - now),
    );
  }

  return {
    observe(key) {
      if (closed) return 'log';
      const now = clock.now();
      sweep(now, false);
      let id = JSON.stringify(Object.entries(key));
      let window = windows.get(id);
      if (window === undefined && windows.size >= maxKeys + (windows.has(untrackedId) ? 1 : 0)) {
        id = untrackedId;
        window = windows.get(id);
      }
      if (window === undefined) {
        window = { key: id === untrackedId ? UNTRACKED_KEY : key, startedAt: now, count: 0, firstAt: now, lastAt: now };
        windows.set(id, window);
        arm(now);
        if (logFirst) return 'log';
      }
      if (window.count === 0) window.firstAt = now;
      window.count += 1;
      window.lastAt = now;
      return 'counted';
    },
    close() {
      if (closed) return;
      closed = true;
      if (timer !== undefined) timers.clearTimeout(timer);
      timer = undefined;
      sweep(clock.now(), true);
    },
  };
}
