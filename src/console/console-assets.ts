import { readFile } from 'node:fs/promises';

/*
 * The console's scripts and stylesheet: plain files beside this module (src/console/assets/,
 * copied to dist/console/assets/ by scripts/build.mjs), read once at start. No bundler, no
 * framework, nothing fetched from outside the machine (docs/decisions.md "Operator console").
 * The console's script is ES modules: console.js (the entry the shells load) imports one module
 * per view and console-util.js; each is served at `/assets/<name>` as listed here.
 */

/** Every file the console serves, by name under `/assets/`: one line each (keeps merges simple). */
export const CONSOLE_ASSET_FILES = [
  'console.js',
  'console-util.js',
  'overview-view.js',
  'executions-view.js',
  'approvals-view.js',
  'reconciliation-view.js',
  'agents-view.js',
  'audit-view.js',
  'spend-view.js',
  'live.js',
  'login.js',
  'console.css',
] as const;
export type ConsoleAssetFile = (typeof CONSOLE_ASSET_FILES)[number];

export interface ConsoleAssets {
  /** Each file's text by name. */
  readonly files: ReadonlyMap<ConsoleAssetFile, string>;
}

/** The Content-Type of an asset by its extension. */
export function assetType(name: string): string {
  return name.endsWith('.css') ? 'text/css; charset=utf-8' : 'text/javascript; charset=utf-8';
}

export async function loadConsoleAssets(): Promise<ConsoleAssets> {
  const read = (name: string) => readFile(new URL(`./assets/${name}`, import.meta.url), 'utf8');
  const texts = await Promise.all(CONSOLE_ASSET_FILES.map(read));
  return { files: new Map(CONSOLE_ASSET_FILES.map((name, index) => [name, texts[index] ?? ''])) };
}
