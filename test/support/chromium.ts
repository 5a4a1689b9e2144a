import { existsSync } from 'node:fs';

/*
 * The headless Chromium the console's browser tests drive (Debian's `chromium` package, through
 * playwright-core with `executablePath`; nothing is downloaded). LEXEC_CHROMIUM overrides the
 * path. Without one the browser tests skip (scripts/test.sh says so in one line) — except in CI,
 * where .ci/run installs it and a missing browser fails the run.
 */

export const CHROMIUM_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking'];

/** The Chromium binary, or null when there is none here (outside CI). */
export function chromiumPath(): string | null {
  const path = process.env.LEXEC_CHROMIUM ?? '/usr/bin/chromium';
  if (existsSync(path)) return path;
  if (process.env.CI === 'true') throw new Error(`CI needs Chromium at ${path} (.ci/run installs Debian's chromium package)`);
  return null;
}
