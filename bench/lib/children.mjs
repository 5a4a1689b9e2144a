// Child-process bookkeeping shared by the benchmarks that start lexec servers: every child is
// tracked so none outlives the script, stopped with a signal and forced after a bound.

/** The environment a benchmark child gets: only HOME and PATH, so nothing ambient leaks in. */
export function childEnv(home) {
  const env = { HOME: home };
  if (process.env.PATH !== undefined) env.PATH = process.env.PATH;
  return env;
}

/**
 * A registry of child processes. `track` records a spawned child and how it ended; `stopChild`
 * signals one and SIGKILLs it if it has not exited within `stopTimeoutMs`. On process exit any
 * child still running gets `exitSignal` (last resort: an uncaught error, process.exit elsewhere).
 */
export function createChildRegistry({ stopTimeoutMs, exitSignal = 'SIGTERM' }) {
  const children = [];

  function track(name, child) {
    const entry = { name, child, exit: null, exited: null };
    entry.exited = new Promise((done) => {
      child.once('exit', (code, signal) => {
        entry.exit = { code, signal };
        done(entry.exit);
      });
      child.once('error', (error) => {
        entry.exit ??= { code: null, signal: null, error: error.message };
        done(entry.exit);
      });
    });
    children.push(entry);
    return entry;
  }

  /** Stops one child with `signal` (SIGKILL if it has not exited in time); returns how it ended. */
  async function stopChild(entry, signal = 'SIGTERM') {
    if (entry === undefined || entry === null) return null;
    if (entry.exit === null) entry.child.kill(signal);
    let timer;
    const outcome = await Promise.race([entry.exited, new Promise((done) => (timer = setTimeout(() => done(null), stopTimeoutMs)))]);
    clearTimeout(timer);
    if (outcome === null) {
      entry.child.kill('SIGKILL');
      await entry.exited;
      return { ...entry.exit, forced: true };
    }
    return { ...outcome, forced: false };
  }

  /** Forgets a child that has been stopped on purpose (e.g. a tracer). */
  function forget(entry) {
    const index = children.indexOf(entry);
    if (index !== -1) children.splice(index, 1);
  }

  process.on('exit', () => {
    for (const entry of children) if (entry.exit === null) entry.child.kill(exitSignal);
  });

  return { children, track, stopChild, forget };
}
