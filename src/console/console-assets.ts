import { readFile } from 'node:fs/promises';

/*
 * The console's script and stylesheet: plain files beside this module (src/console/assets/,
 * copied to dist/console/assets/ by scripts/build.mjs), read once at start. No bundler, no
 * framework, nothing fetched from outside the machine (docs/decisions.md "Operator console").
 */

export interface ConsoleAssets {
  readonly script: string;
  readonly loginScript: string;
  readonly style: string;
}

export async function loadConsoleAssets(): Promise<ConsoleAssets> {
  const read = (name: string) => readFile(new URL(`./assets/${name}`, import.meta.url), 'utf8');
  const [script, loginScript, style] = await Promise.all([read('console.js'), read('login.js'), read('console.css')]);
  return { script, loginScript, style };
}
