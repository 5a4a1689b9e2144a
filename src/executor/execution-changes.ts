/*
 * Waiting for an execution's next change (docs/executor.md "Waiting for a change"): the store
 * tells this notifier whenever an execution's state or phase may have changed; the detail route's
 * long-poll waits on it instead of the caller polling. In-process and unpersisted: both engines
 * run their activities in the executor's own process, so every change passes through here.
 * Bounded: at most `maxWaiters` waits at once (more answer at once), each for at most its own
 * timeout, and `close()` (the server stopping) ends every wait.
 */

export interface ExecutionChanges {
  /** The execution's state or phase may have changed: wakes its waiters. */
  notify(executionId: string): void;
  /**
   * Resolves at the execution's next change, after `timeoutMs`, or at close — whichever comes
   * first. Answers `false` at once, without waiting, when `maxWaiters` are waiting already or
   * after close.
   */
  wait(executionId: string, timeoutMs: number): Promise<boolean>;
  /** Waits in progress. */
  waiting(): number;
  /** Ends every wait and refuses new ones. */
  close(): void;
}

export function createExecutionChanges(options: { readonly maxWaiters?: number } = {}): ExecutionChanges {
  const maxWaiters = options.maxWaiters ?? 1_000;
  const waiters = new Map<string, Set<() => void>>();
  let count = 0;
  let closed = false;

  function wakeAll(executionId: string): void {
    const set = waiters.get(executionId);
    if (set === undefined) return;
    waiters.delete(executionId);
    for (const wake of set) wake();
  }

  return {
    notify: wakeAll,
    wait(executionId, timeoutMs) {
      if (closed || count >= maxWaiters) return Promise.resolve(false);
      return new Promise<boolean>((resolve) => {
        const set = waiters.get(executionId) ?? new Set<() => void>();
        waiters.set(executionId, set);
        count += 1;
        const wake = () => {
          clearTimeout(timer);
          set.delete(wake);
          if (set.size === 0 && waiters.get(executionId) === set) waiters.delete(executionId);
          count -= 1;
          resolve(true);
        };
        const timer = setTimeout(wake, timeoutMs);
        set.add(wake);
      });
    },
    waiting: () => count,
    close() {
      closed = true;
      for (const executionId of [...waiters.keys()]) wakeAll(executionId);
    },
  };
}
