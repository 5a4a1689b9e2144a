// Writes test/support/file-durations.json: each test file's duration in whole seconds, from
// vitest's cache of this checkout's runs (node_modules/.vite/vitest/*/results.json). Run it after
// a whole-suite run (`bash scripts/test.sh`), so that the figures are of one run on one machine;
// longest-first-sequencer.ts starts the longest files first by them on a clean clone (CI).
//
//   node test/support/write-file-durations.mjs
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const cacheRoot = join(root, 'node_modules', '.vite', 'vitest');
if (!existsSync(cacheRoot)) {
  process.stderr.write(`write-file-durations: ${cacheRoot} is missing: run the suite first\n`);
  process.exit(1);
}
const seconds = {};
for (const dir of readdirSync(cacheRoot)) {
  const results = join(cacheRoot, dir, 'results.json');
  if (!existsSync(results)) continue;
  for (const project of Object.values(JSON.parse(readFileSync(results, 'utf8')).projects ?? {})) {
    for (const [file, result] of Object.entries(project.files ?? {})) {
      if (existsSync(join(root, file)) && typeof result.duration === 'number') seconds[file] = Math.round(result.duration / 1000);
    }
  }
}
const sorted = Object.fromEntries(Object.entries(seconds).sort(([a], [b]) => (a < b ? -1 : 1)));
const out = join(root, 'test', 'support', 'file-durations.json');
writeFileSync(out, `${JSON.stringify({ note: 'Seconds per test file, from vitest\'s cache: node test/support/write-file-durations.mjs (longest-first-sequencer.ts)', seconds: sorted }, null, 2)}\n`);
process.stderr.write(`write-file-durations: ${Object.keys(sorted).length} files written to ${out}\n`);
