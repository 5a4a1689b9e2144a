/**
 * Runs `work` with a signal that aborts on the first SIGINT or SIGTERM (a `--follow` stopped by
 * Ctrl-C or a supervisor), and removes its handlers once the work ends, however it ends.
 */
export async function untilInterrupted<T>(work: (signal: AbortSignal) => Promise<T>): Promise<T> {
  const stop = new AbortController();
  const onSignal = () => {
    stop.abort();
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  try {
    return await work(stop.signal);
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
}
