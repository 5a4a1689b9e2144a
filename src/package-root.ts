import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

/*
 * Where this installation's shipped files are (bin/, profiles.example/, templates/, package.json).
 * This module sits directly under src/ (dist/ once built), so the package root is one level up
 * whatever folder a caller lives in; moving a module never breaks a path built here.
 */

export const PACKAGE_ROOT = fileURLToPath(new URL('..', import.meta.url));

/** A path inside the installed package, e.g. `packagePath('bin', 'run.js')`. */
export function packagePath(...parts: string[]): string {
  return join(PACKAGE_ROOT, ...parts);
}
