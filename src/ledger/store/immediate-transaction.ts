import type Database from 'better-sqlite3';
import { awaitWriteTurn } from '../../storage/shared-write-lock.js';

/** Runs a function in an IMMEDIATE transaction of `db` (inside another one: as a savepoint). */
export type Immediate = <T>(fn: () => T) => T;

/**
 * One transaction function for every use case (building one per call costs about 6 µs). Before it
 * begins, it waits while the webhook delivery thread holds the write lock, if the connection has
 * been told of that thread (storage/shared-write-lock.ts).
 */
export function immediateTransaction(db: Database.Database): Immediate {
  const transaction = db.transaction((fn: () => unknown) => fn());
  return <T>(fn: () => T): T => {
    awaitWriteTurn(db);
    return transaction.immediate(fn) as T;
  };
}

/**
 * Runs a function that only reads in one DEFERRED transaction of `db`: one consistent snapshot of
 * every statement in it (WAL), and no write lock — a writer neither waits for it nor holds it up.
 */
export function readTransaction(db: Database.Database): Immediate {
  const transaction = db.transaction((fn: () => unknown) => fn());
  return <T>(fn: () => T): T => transaction.deferred(fn) as T;
}
