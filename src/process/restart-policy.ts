/*
 * When the supervisor restarts a child that exited on its own (docs/stack-runtime.md "Restart
 * policy"). Pure: no timers, no processes. The delay doubles with each consecutive crash, from
 * 0.5 s up to 30 s, so a child that cannot start costs at most one attempt per 30 s; a child that
 * stayed up for STABLE_AFTER_MS counts as healthy again and its next crash restarts it quickly.
 */

export const RESTART_INITIAL_DELAY_MS = 500;
export const RESTART_MAX_DELAY_MS = 30_000;
/** A child that ran this long before exiting is "stable": its crash streak starts over. */
export const STABLE_AFTER_MS = 60_000;

/** Delay before restart number `streak + 1` of a crash streak (`streak` = earlier consecutive crashes). */
export function restartDelayMs(streak: number): number {
  const exponent = Math.min(Math.max(0, streak), 16);
  return Math.min(RESTART_INITIAL_DELAY_MS * 2 ** exponent, RESTART_MAX_DELAY_MS);
}

/** The crash streak after a child that ran for `uptimeMs` exited unexpectedly. */
export function nextStreak(streak: number, uptimeMs: number): number {
  return uptimeMs >= STABLE_AFTER_MS ? 1 : streak + 1;
}
