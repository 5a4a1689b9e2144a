import { open, type FileHandle } from 'node:fs/promises';
import { errorCode, UserError } from '../../errors.js';
import { LOG_RETAINED, logFilePath, type LogComponent } from '../../process/log-files.js';

/*
 * A component's log chain (naming: src/process/log-files.ts): the active file and its retained generations,
 * 1 the newest. Rotation renames .3→.4 … active→.1 and starts a new active file, so a file's
 * identity (device + inode) survives its renames.
 */

/** One file of a chain, opened: reads go through the descriptor, so a rename mid-read changes nothing. */
export interface OpenLogFile {
  readonly path: string;
  readonly generation: number;
  readonly handle: FileHandle;
  /** Size when opened: what this read covers. */
  readonly size: number;
  readonly identity: string;
}

export function fileIdentity(stats: { dev: number | bigint; ino: number | bigint }): string {
  return `${String(stats.dev)}:${String(stats.ino)}`;
}

/** Opens a file for reading, or null when it does not exist (or vanished under a rotation). */
export async function openIfPresent(path: string): Promise<FileHandle | null> {
  try {
    return await open(path, 'r');
  } catch (error) {
    if (errorCode(error) === 'ENOENT') return null;
    if (errorCode(error) === 'EACCES' || errorCode(error) === 'EPERM') {
      throw new UserError('log_file_unreadable', `The log file ${path} cannot be read (permission denied).`, {
        nextStep: 'Run the command as the user that runs the stack (the owner of the profile directory).',
      });
    }
    throw error;
  }
}

/**
 * Opens every file of a component's chain, newest first. Opening newest first means a rotation
 * during the opening can only make a file show up twice (the renamed active file is found again
 * as .1), which the identity check drops — never make one go missing, except the oldest
 * generation that the rotation deletes anyway. The caller closes the handles.
 */
export async function openLogChain(logsDir: string, component: LogComponent): Promise<OpenLogFile[]> {
  const files: OpenLogFile[] = [];
  const seen = new Set<string>();
  try {
    for (let generation = 0; generation <= LOG_RETAINED; generation += 1) {
      const path = logFilePath(logsDir, component, generation);
      const handle = await openIfPresent(path);
      if (handle === null) continue;
      const stats = await handle.stat();
      const identity = fileIdentity(stats);
      if (!stats.isFile() || seen.has(identity)) {
        await handle.close();
        continue;
      }
      seen.add(identity);
      files.push({ path, generation, handle, size: stats.size, identity });
    }
  } catch (error) {
    await closeLogChain(files);
    throw error;
  }
  return files;
}

export async function closeLogChain(files: readonly OpenLogFile[]): Promise<void> {
  await Promise.all(files.map((file) => file.handle.close()));
}
