import { constants } from 'node:fs';
import { open, readFile, unlink } from 'node:fs/promises';
import { UserError } from '../errors.js';

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: the process exists but belongs to someone else.
    return (error as NodeJS.ErrnoException).code === 'EPERM';
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
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      const owner = Number.parseInt(await readFile(path, 'utf8').catch(() => ''), 10);
      if (Number.isInteger(owner) && owner > 0 && owner !== process.pid && alive(owner)) throw lockedError();
      await unlink(path).catch(() => undefined);
    }
  }
  throw lockedError();
}
