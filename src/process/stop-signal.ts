/**
 * The first SIGINT or SIGTERM a server receives from now on. Call it before the server says it
 * started: a supervisor that reads the start line and stops the server at once must find the
 * handlers there — without them SIGTERM ends the process by its default action, not by the
 * server's orderly stop.
 */
export function stopSignal(): Promise<'SIGINT' | 'SIGTERM'> {
  return new Promise((resolve) => {
    process.once('SIGINT', () => {
      resolve('SIGINT');
    });
    process.once('SIGTERM', () => {
      resolve('SIGTERM');
    });
  });
}
