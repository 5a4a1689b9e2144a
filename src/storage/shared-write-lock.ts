import Database from 'better-sqlite3';

/*
 * Two threads of one process writing one SQLite database: the ledger's request thread and its
 * webhook delivery thread (docs/decisions.md, "The delivery thread and the request thread take
 * turns at the write lock"). SQLite's write lock is still what keeps them apart; this module only
 * decides who waits how.
 *
 * SQLite's own busy handler sleeps 1, 2, 5, 10, 15, 20, 25, 25, 25, 50, 50 and then 100 ms between
 * tries. Against a writer that is in a transaction most of the time and free for a fraction of a
 * millisecond between two (the request thread under load), the sleeps soon outgrow every gap: the
 * delivery thread was measured asleep 4.5 s of every 5 at 230 cycles/s, and a webhook's commit →
 * receipt p95 grew to 6 s. And each time the request thread met the delivery thread's lock, it
 * slept a whole millisecond for a transaction that had a fraction of one left.
 *
 * So: the delivery thread's connection has a busy timeout of 0 and tries BEGIN IMMEDIATE again
 * every `pollMs` (a blocking wait on an Atomics cell: sub-millisecond) until `timeoutMs`, and
 * while it holds the lock it raises a signal in shared memory (a `SharedArrayBuffer` cell). The
 * request thread, before each IMMEDIATE transaction, looks at the signal (one atomic load) and, if
 * it is up, waits on it — woken by the delivery thread's commit, at most `MAX_SIGNAL_WAIT_MS` —
 * and then begins as before: under SQLite's busy timeout, which still covers anything the signal
 * does not (another process, a signal left up by a thread that died).
 */

/** The longest a transaction waits on the signal before it goes to SQLite's busy handler. */
const MAX_SIGNAL_WAIT_MS = 100;

/** A new signal, up (1) while the delivery thread holds the write lock; passed to it in its workerData. */
export function createWriteSignal(): SharedArrayBuffer {
  return new SharedArrayBuffer(Int32Array.BYTES_PER_ELEMENT);
}

const signals = new WeakMap<Database.Database, { readonly cell: Int32Array; readonly maxWaitMs: number }>();

/**
 * From now on, `db`'s IMMEDIATE transactions (store/immediate-transaction.ts) wait while `signal`
 * is up, each at most `maxWaitMs` (default MAX_SIGNAL_WAIT_MS).
 */
export function yieldToSignal(db: Database.Database, signal: SharedArrayBuffer, maxWaitMs: number = MAX_SIGNAL_WAIT_MS): void {
  signals.set(db, { cell: new Int32Array(signal), maxWaitMs });
}

/** Lowers the signal in `cell` and wakes whoever waits on it. */
function lower(cell: Int32Array): void {
  Atomics.store(cell, 0, 0);
  Atomics.notify(cell, 0);
}

/** Lowers `signal` and wakes whoever waits on it (the delivery thread has ended without lowering it). */
export function lowerSignal(signal: SharedArrayBuffer): void {
  lower(new Int32Array(signal));
}

/** Called before `db` begins an IMMEDIATE transaction: waits while the other thread's signal is up. */
export function awaitWriteTurn(db: Database.Database): void {
  const signal = signals.get(db);
  if (signal !== undefined && Atomics.load(signal.cell, 0) === 1 && !db.inTransaction) Atomics.wait(signal.cell, 0, 1, signal.maxWaitMs);
}

export interface PollingTransactionOptions {
  /** The wait between two tries of BEGIN IMMEDIATE, in milliseconds (fractions allowed). */
  readonly pollMs: number;
  /** How long to keep trying before the SQLITE_BUSY is thrown. */
  readonly timeoutMs: number;
  /** Raised while this connection holds the write lock. */
  readonly signal: SharedArrayBuffer;
}

export type PollingImmediate = <T>(fn: () => T) => T;

function isBusy(error: unknown): boolean {
  return error instanceof Database.SqliteError && error.code.startsWith('SQLITE_BUSY');
}

/**
 * The delivery thread's side. Sets `db`'s busy timeout to 0 — every lock wait of this connection
 * is this function's from now on (a plain read in WAL takes none) — and answers a runner of
 * IMMEDIATE transactions that polls for the write lock and raises `signal` while it holds it.
 * Only a BEGIN that found the lock taken is tried again: once `fn` has started, whatever it throws
 * is thrown (and rolled back), so `fn` never runs twice.
 */
export function pollingImmediateTransaction(db: Database.Database, options: PollingTransactionOptions): PollingImmediate {
  db.pragma('busy_timeout = 0');
  const signal = new Int32Array(options.signal);
  const pause = new Int32Array(new SharedArrayBuffer(Int32Array.BYTES_PER_ELEMENT));
  // Counts the tries that got past BEGIN: one that did not is the only kind tried again.
  let begun = 0;
  const transaction = db.transaction((fn: () => unknown) => {
    begun += 1;
    Atomics.store(signal, 0, 1);
    return fn();
  });
  return <T>(fn: () => T): T => {
    const deadline = performance.now() + options.timeoutMs;
    for (;;) {
      const before = begun;
      try {
        return transaction.immediate(fn) as T;
      } catch (error) {
        if (begun !== before || !isBusy(error) || performance.now() >= deadline) throw error;
        // Nobody notifies this cell: a sleep of pollMs, finer than a timer's.
        Atomics.wait(pause, 0, 0, options.pollMs);
      } finally {
        // Committed or rolled back: the lock is free.
        if (begun !== before) lower(signal);
      }
    }
  };
}
