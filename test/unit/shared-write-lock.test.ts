import { createRequire } from 'node:module';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { immediateTransaction } from '../../src/ledger/store/immediate-transaction.js';
import { openDatabase } from '../../src/storage/open-database.js';
import { createWriteSignal, lowerSignal, pollingImmediateTransaction, yieldToSignal } from '../../src/storage/shared-write-lock.js';
import { makeTempDir, removeDir } from '../support/cli.js';

/*
 * The ledger's two writers (storage/shared-write-lock.ts), each side against a real second thread
 * holding the real SQLite write lock of a real database file: the other thread is a worker that
 * takes BEGIN IMMEDIATE, says so, holds it for a while, writes a row and commits — raising and
 * lowering a signal around it when given one, as the delivery thread does.
 */

const HOLDER = `
const { workerData, parentPort } = require('node:worker_threads');
const Database = require(workerData.sqlite);
const db = new Database(workerData.path);
const signal = workerData.signal === null ? null : new Int32Array(workerData.signal);
const pause = new Int32Array(new SharedArrayBuffer(4));
parentPort.on('message', (holdMs) => {
  db.exec('BEGIN IMMEDIATE');
  if (signal !== null) Atomics.store(signal, 0, 1);
  parentPort.postMessage('held');
  Atomics.wait(pause, 0, 0, holdMs);
  db.prepare("INSERT INTO marks (who) VALUES ('holder')").run();
  db.exec('COMMIT');
  if (signal !== null) { Atomics.store(signal, 0, 0); Atomics.notify(signal, 0); }
  parentPort.postMessage('released');
});
`;

let dir: string;
let path: string;
let db: Database.Database;
let holder: Worker | null = null;

beforeEach(async () => {
  dir = await makeTempDir('lexec-write-lock-');
  path = join(dir, 'test.db');
  db = openDatabase(path, [{ version: 1, name: 'marks', up: 'CREATE TABLE marks (id INTEGER PRIMARY KEY, who TEXT NOT NULL)' }]);
});

afterEach(async () => {
  await holder?.terminate();
  holder = null;
  db.close();
  await removeDir(dir);
});

/** Starts the holder thread; `hold(ms)` resolves once it holds the write lock, `released` once it has committed. */
function startHolder(signal: SharedArrayBuffer | null): { hold: (ms: number) => Promise<void>; released: () => Promise<void> } {
  const sqlite = createRequire(import.meta.url).resolve('better-sqlite3');
  const worker = new Worker(HOLDER, { eval: true, workerData: { sqlite, path, signal } });
  holder = worker;
  const next = (message: string) =>
    new Promise<void>((resolve, reject) => {
      const onMessage = (got: unknown) => {
        if (got !== message) return;
        worker.off('message', onMessage);
        resolve();
      };
      worker.on('message', onMessage);
      worker.once('error', reject);
    });
  return {
    hold: async (ms) => {
      const held = next('held');
      worker.postMessage(ms);
      await held;
    },
    released: () => next('released'),
  };
}

const marks = () => (db.prepare('SELECT who FROM marks ORDER BY id').all() as { who: string }[]).map((row) => row.who);

describe('the delivery thread’s side: polling for the write lock', () => {
  it('waits out a lock held past SQLite’s first sleeps, runs the transaction once, with its signal up inside and down after', async () => {
    const other = startHolder(null);
    const released = other.released();
    const signal = createWriteSignal();
    const polling = pollingImmediateTransaction(db, { pollMs: 0.25, timeoutMs: 5_000, signal });
    expect(db.pragma('busy_timeout', { simple: true })).toBe(0n);
    await other.hold(300);
    const seenInside: number[] = [];
    polling(() => {
      seenInside.push(Atomics.load(new Int32Array(signal), 0));
      db.prepare("INSERT INTO marks (who) VALUES ('poller')").run();
    });
    await released;
    expect(seenInside).toEqual([1]);
    expect(Atomics.load(new Int32Array(signal), 0)).toBe(0);
    // The holder committed first: the poller began only once the lock was free.
    expect(marks()).toEqual(['holder', 'poller']);
  });

  it('gives up with SQLITE_BUSY once its timeout has passed, never having run the transaction', async () => {
    const other = startHolder(null);
    const released = other.released();
    const signal = createWriteSignal();
    const polling = pollingImmediateTransaction(db, { pollMs: 0.25, timeoutMs: 100, signal });
    await other.hold(1_500);
    let runs = 0;
    let thrown: unknown;
    try {
      polling(() => {
        runs += 1;
      });
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(Database.SqliteError);
    expect(thrown).toMatchObject({ code: expect.stringMatching(/^SQLITE_BUSY/) as unknown });
    expect(runs).toBe(0);
    expect(Atomics.load(new Int32Array(signal), 0)).toBe(0);
    await released;
    expect(marks()).toEqual(['holder']);
  });

  it('does not try again a transaction that failed once begun: thrown as it is, rolled back, the signal lowered', () => {
    const signal = createWriteSignal();
    const polling = pollingImmediateTransaction(db, { pollMs: 0.25, timeoutMs: 5_000, signal });
    let runs = 0;
    expect(() =>
      polling(() => {
        runs += 1;
        db.prepare("INSERT INTO marks (who) VALUES ('half')").run();
        // Even an error that says busy, once the transaction has begun, is not a reason to run it again.
        throw new Database.SqliteError('database is locked', 'SQLITE_BUSY');
      }),
    ).toThrow('database is locked');
    expect(runs).toBe(1);
    expect(marks()).toEqual([]);
    expect(Atomics.load(new Int32Array(signal), 0)).toBe(0);
  });
});

describe('the request thread’s side: waiting on the signal', () => {
  it('begins once the other thread lowers its signal, where SQLite alone (busy timeout 0 here) would refuse at once', async () => {
    const signal = createWriteSignal();
    const other = startHolder(signal);
    db.pragma('busy_timeout = 0');
    const immediate = immediateTransaction(db);

    // Without the signal known, the held lock refuses the transaction: the test can tell.
    let released = other.released();
    await other.hold(200);
    expect(() => immediate(() => db.prepare("INSERT INTO marks (who) VALUES ('too soon')").run())).toThrow(/locked|busy/i);
    await released;

    // Waits on the signal for as long as it takes here (not the ledger's 100 ms): the notify ends the wait, not a timer.
    yieldToSignal(db, signal, 30_000);
    released = other.released();
    await other.hold(200);
    immediate(() => db.prepare("INSERT INTO marks (who) VALUES ('request')").run());
    await released;
    expect(marks()).toEqual(['holder', 'holder', 'request']);
  });

  it('a signal left up with no lock behind it (a thread that died) holds a transaction back only briefly, and lowerSignal clears it', () => {
    const signal = createWriteSignal();
    yieldToSignal(db, signal);
    Atomics.store(new Int32Array(signal), 0, 1);
    const immediate = immediateTransaction(db);
    immediate(() => db.prepare("INSERT INTO marks (who) VALUES ('despite')").run());
    lowerSignal(signal);
    expect(Atomics.load(new Int32Array(signal), 0)).toBe(0);
    immediate(() => db.prepare("INSERT INTO marks (who) VALUES ('after')").run());
    expect(marks()).toEqual(['despite', 'after']);
  });
});
