import { readFile } from 'node:fs/promises';

/*
 * The console's script and stylesheet: plain files beside this module (src/console/assets/,
 * copied to dist/console/assets/ by scripts/build.mjs), read once at start. No bundler, no
 * framework, nothing fetched from outside the machine (docs/decisions.md "Operator console").
 */

export interface ConsoleAssets {
  readonly script: string;
  /** The Spend view's own script (its chart and table), beside the main one. */
  readonly spendScript: string;
  readonly loginScript: string;
  readonly style: string;
}

export async function loadConsoleAssets(): Promise<ConsoleAssets> {
  const read = (name: string) => readFile(new URL(`./assets/${name}`, import.meta.url), 'utf8');
  const [script, spendScript, loginScript, style] = await Promise.all([read('console.js'), read('spend-view.js'), read('login.js'), read('console.css')]);
  return { script, spendScript, loginScript, style };
}
