import { statfs } from 'node:fs/promises';

/*
 * Whether a server can still write where it keeps its state (issue 26: a full disk was reported as
 * usable). A server samples the free space of its directories with statfs — cheap, no write —
 * and stops taking new work while one of them is below the minimum, before a SQLite commit or an
 * artifact write fails half-way through a paid job. docs/decisions.md "A full disk".
 */

/** Free space below which a directory counts as full: room for a SQLite journal, a few images and log lines. */
export const MIN_FREE_BYTES = 16 * 1024 * 1024;

/** A directory's free space is below the minimum (`path`: the directory, as configured). */
export interface DiskFull {
  readonly path: string;
  readonly availableBytes: number;
}

/**
 * The first of `paths` whose filesystem has less than `minFreeBytes` available to this process,
 * or null when all have room. A directory that cannot be examined (not created yet) is skipped:
 * what cannot be measured is not reported as full.
 */
export async function findFullDisk(paths: readonly string[], minFreeBytes = MIN_FREE_BYTES): Promise<DiskFull | null> {
  for (const path of new Set(paths)) {
    try {
      const space = await statfs(path);
      const availableBytes = space.bavail * space.bsize;
      if (availableBytes < minFreeBytes) return { path, availableBytes };
    } catch {
      // not there (yet), or not a filesystem statfs answers for
    }
  }
  return null;
}

/** How long one disk sample stands for a server that asks on every health check. */
export const DISK_SAMPLE_MS = 5_000;

/**
 * The free space of `paths`, sampled at most once per DISK_SAMPLE_MS however often it is asked
 * (a health route probed by the launcher and by hand); `onChange` hears each change between full
 * and not, once, so a server logs a full disk once rather than per request.
 */
export function watchDiskSpace(options: { readonly paths: readonly string[]; readonly now: () => number; readonly onChange: (full: DiskFull | null, before: DiskFull | null) => void }) {
  let last: { at: number; full: DiskFull | null } | undefined;
  let sampling: Promise<DiskFull | null> | undefined;
  return {
    async current(): Promise<DiskFull | null> {
      if (last !== undefined && options.now() - last.at < DISK_SAMPLE_MS) return last.full;
      sampling ??= findFullDisk(options.paths).then((full) => {
        const before = last?.full ?? null;
        last = { at: options.now(), full };
        sampling = undefined;
        if ((full === null) !== (before === null) || (full !== null && full.path !== before?.path)) options.onChange(full, before);
        return full;
      });
      return sampling;
    },
  };
}
