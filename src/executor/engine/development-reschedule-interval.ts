import type { BuildKind } from '../../build-info.js';

/**
 * The environment variable that shortens the rescheduler's interval (development builds only), so
 * the proof suite sees a terminated run started again in seconds rather than within a minute. A
 * release build ignores it: operators get the documented 30 s.
 */
export const RESCHEDULE_INTERVAL_ENV = 'LEXEC_DEV_RESCHEDULE_INTERVAL_MS';

/** The interval the environment asks for in a development build (200 ms … 30 s), else undefined (the default). */
export function developmentRescheduleIntervalMs(buildKind: BuildKind, env: NodeJS.ProcessEnv): number | undefined {
  const asked = env[RESCHEDULE_INTERVAL_ENV];
  if (buildKind !== 'development' || asked === undefined || !/^[0-9]{1,6}$/.test(asked)) return undefined;
  return Math.min(30_000, Math.max(200, Number(asked)));
}
