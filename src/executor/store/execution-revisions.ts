/**
 * Revisions of what the executor has stored for each execution, kept in memory: every write
 * the store makes for an execution gives it a revision higher than any handed out before, so an
 * answer derived from an execution's rows at revision r is current exactly while the execution
 * is still at revision r. This is sound because the executor is the only writer of its database
 * (one process holds the database lock, and every write to the rows an execution's answer is
 * made of goes through the store); the store also moves every execution on when another
 * connection has committed anything (see `revision` in the store).
 *
 * Memory is bounded: only the `remembered` most recently written executions keep their own
 * revision; the others share a floor, which rises to the revision of each one forgotten. An
 * execution's revision therefore never goes back and always moves on after a write. It may also
 * move on without one (when the floor rises): a needless recomputation, never a stale answer.
 */
export function createExecutionRevisions(remembered: number) {
  const recent = new Map<string, number>();
  let latest = 0;
  let floor = 0;

  return {
    /** Something stored for `executionId` changed (or may have): it moves to a new revision. */
    bump(executionId: string): void {
      latest += 1;
      recent.delete(executionId);
      recent.set(executionId, latest);
      if (recent.size > remembered) {
        // Map order is insertion order, so the first entry is the least recently written and
        // holds the lowest revision still remembered: the floor only rises.
        const [oldest, revision] = recent.entries().next().value as [string, number];
        recent.delete(oldest);
        floor = revision;
      }
    },

    /** Anything may have changed (a write this process did not make): every execution moves on. */
    bumpAll(): void {
      latest += 1;
      floor = latest;
      recent.clear();
    },

    current: (executionId: string): number => recent.get(executionId) ?? floor,
  };
}
