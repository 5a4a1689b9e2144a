import type Database from 'better-sqlite3';

/** Runs a function in an IMMEDIATE transaction of `db` (inside another one: as a savepoint). */
export type Immediate = <T>(fn: () => T) => T;

/** One transaction function for every use case (building one per call costs about 6 µs). */
export function immediateTransaction(db: Database.Database): Immediate {
  const transaction = db.transaction((fn: () => unknown) => fn());
  return <T>(fn: () => T): T => transaction.immediate(fn) as T;
}
