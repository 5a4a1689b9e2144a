import { constants, readFileSync } from 'node:fs';
import { open, readFile, unlink } from 'node:fs/promises';
import { errorCode, UserError } from '../errors.js';

/**
 * Whether `pid` is a running process. A zombie — killed, but not yet reaped by its parent — is
 * not: it holds nothing any more, yet answers signal 0 until it is reaped, which in a container
 * whose init reaps lazily can take seconds (or forever). Its state comes from /proc on Linux.
 */
export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (error) {
    // EPERM: the process exists but belongs to someone else.
    return errorCode(error) === 'EPERM';
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
    return state !== 'Z' && state !== 'X';
  } catch {
    // No /proc (not Linux), or it exited just now: signal 0 answered, so count it as alive.
    return true;
  }
}

/**
 * An exclusive lock owned by this process: `<path>` holds the owner's pid, created with O_EXCL.
 * A lock whose owner is no longer running (e.g. after SIGKILL) is taken over at once; a live
 * owner's lock is refused with `lockedError`. Returns the release function.
 */
export async function acquireProcessLock(path: string, lockedError: () => UserError): Promise<() => Promise<void>> {
  for (let attempt = 0; attempt < 2; attempt += 1) {
    try {
      const handle = await open(path, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600);
      await handle.writeFile(`${process.pid}\n`);
      await handle.close();
      return async () => {
        await unlink(path).catch(() => undefined);
      };
    } catch (error) {
      if (errorCode(error) !== 'EEXIST') throw error;
      const owner = Number.parseInt(await readFile(path, 'utf8').catch(() => ''), 10);
      if (Number.isInteger(owner) && owner > 0 && owner !== process.pid && processAlive(owner)) throw lockedError();
      await unlink(path).catch(() => undefined);
    }
  }
  throw lockedError();
}
