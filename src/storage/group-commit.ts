import type Database from 'better-sqlite3';

/**
 * Group commit for a durable write that many concurrent requests make: the writes asked for in
 * one turn of the event loop are committed together, in one `IMMEDIATE` transaction with one
 * fsync, instead of one fsync each. Each write runs in its own savepoint, so a write that throws
 * fails only its own caller and the others still commit; if the commit itself fails, every
 * write of the batch fails and nothing of it is stored. A caller's promise settles only after
 * the commit that holds its write returned, so "resolved" means "durable" exactly as a direct
 * synchronous transaction would.
 *
 * With one request at a time a batch holds one write: the cost is one `setImmediate` hop.
 */
export function createGroupCommit<I, O>(db: Database.Database, write: (input: I) => O): (input: I) => Promise<O> {
  interface Waiting {
    readonly input: I;
    readonly resolve: (output: O) => void;
    readonly reject: (error: unknown) => void;
  }
  type Outcome = { readonly ok: true; readonly output: O } | { readonly ok: false; readonly error: unknown };

  // Called inside the batch's transaction, better-sqlite3 runs a transaction function as a savepoint.
  const writeInSavepoint = db.transaction(write);
  const commitBatch = db.transaction((batch: readonly Waiting[]) =>
    batch.map((waiting): Outcome => {
      try {
        return { ok: true, output: writeInSavepoint(waiting.input) };
      } catch (error) {
        return { ok: false, error };
      }
    }),
  );
  let queue: Waiting[] = [];

  function flush(): void {
    const batch = queue;
    queue = [];
    let outcomes: Outcome[];
    try {
      outcomes = commitBatch.immediate(batch);
    } catch (error) {
      for (const waiting of batch) waiting.reject(error);
      return;
    }
    batch.forEach((waiting, index) => {
      const outcome = outcomes[index] as Outcome;
      if (outcome.ok) waiting.resolve(outcome.output);
      else waiting.reject(outcome.error);
    });
  }

  return (input) =>
    new Promise<O>((resolve, reject) => {
      queue.push({ input, resolve, reject });
      if (queue.length === 1) setImmediate(flush);
    });
}
