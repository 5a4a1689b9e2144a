import { fstatSync } from 'node:fs';
import { Socket } from 'node:net';

/*
 * Preloaded (`node --import <this file>`) into every child of a stack supervisor, so that a
 * child never outlives its supervisor (docs/stack-runtime.md "Orphans"). Node.js has no
 * PR_SET_PDEATHSIG; instead the supervisor gives each child one end of a pipe as file
 * descriptor 3 and never writes to it. The kernel closes the supervisor's end when the
 * supervisor dies, however it dies (SIGKILL included); the child then sees end-of-file here and
 * stops itself gracefully with SIGTERM, exactly as `stack stop` would have stopped it. A child
 * that does not finish its graceful stop within STOP_BOUND_MS is ended with SIGKILL.
 *
 * This module acts when imported — that is its whole purpose, and it is only ever loaded as a
 * preload by the supervisor, never imported by other code. Without a pipe on descriptor 3 (the
 * server started by hand) it does nothing.
 */

const SUPERVISOR_PIPE_FD = 3;
const STOP_BOUND_MS = 20_000;

function isPipe(fd: number): boolean {
  try {
    const info = fstatSync(fd);
    return info.isSocket() || info.isFIFO();
  } catch {
    return false;
  }
}

if (isPipe(SUPERVISOR_PIPE_FD)) {
  const pipe = new Socket({ fd: SUPERVISOR_PIPE_FD, readable: true, writable: false });
  let gone = false;
  const supervisorGone = () => {
    // One SIGTERM only: a second one would find the server's handler used up and kill it at once.
    if (gone) return;
    gone = true;
    pipe.destroy();
    setTimeout(() => {
      process.kill(process.pid, 'SIGKILL');
    }, STOP_BOUND_MS).unref();
    process.kill(process.pid, 'SIGTERM');
  };
  pipe.once('end', supervisorGone);
  pipe.once('error', supervisorGone);
  pipe.on('data', () => undefined);
  // The watch alone must not keep a process alive that has finished its work.
  pipe.unref();
}
