import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { describe, expect, it } from 'vitest';

/*
 * The source tree's shape, held (docs/file-layout.md "Layers", docs/decisions.md): every
 * top-level folder of src/ has a floor, and a module imports only from a lower floor or from its
 * own folder — never upward and never sideways into a peer on its floor; no two modules import
 * each other, even through a chain or a type-only import; no source file over 400 lines and no
 * test file over 800. A move that breaks one of these fails here with the offending import or file.
 */

const ROOT = resolve(import.meta.dirname, '../..');
const SRC = join(ROOT, 'src');

/** Floors, highest first. A folder imports only from folders on a lower floor. */
export const FLOORS: readonly (readonly string[])[] = [
  ['commands', 'hooks'],
  ['run', 'agent', 'console'],
  ['cli'],
  ['stack-client'],
  ['launcher'],
  ['executor'],
  ['ledger', 'provider'],
  ['http', 'process'],
  ['config'],
  ['terminal'],
  ['domain', 'crash-points'],
  ['credentials', 'storage', 'build-info'],
  ['errors', 'package-root', 'product'],
];

function floorOf(folder: string): number {
  const index = FLOORS.findIndex((floor) => floor.includes(folder));
  if (index === -1) throw new Error(`src/${folder} has no floor in FLOORS: give it one (and a line in docs/file-layout.md)`);
  return FLOORS.length - index;
}

function sourceFiles(dir: string, ending: RegExp): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sourceFiles(path, ending);
    return ending.test(name) ? [path] : [];
  });
}

/** `src/<folder>/…` or `src/<file>.ts` → its top-level name. */
function topLevel(file: string): string {
  const first = relative(SRC, file).split(sep)[0] ?? '';
  return first.replace(/\.ts$/, '');
}

const SPECIFIER = /(?:^|\n)\s*(?:import|export)\s[^'"]*?from\s+'(\.{1,2}\/[^']+)'|import\(\s*'(\.{1,2}\/[^']+)'\s*\)/g;

/** Every relative module a file imports (type-only imports too), as absolute .ts paths. */
function importsOf(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  return [...text.matchAll(SPECIFIER)].map((match) => {
    const spec = match[1] ?? match[2] ?? '';
    return resolve(dirname(file), spec.replace(/\.js$/, '.ts'));
  });
}

const files = sourceFiles(SRC, /\.ts$/);
const graph = new Map(files.map((file) => [file, importsOf(file).filter((target) => target.startsWith(SRC))]));

function rel(file: string): string {
  return relative(ROOT, file);
}

describe('source layers', () => {
  it('every import goes down a floor or stays in its own folder', () => {
    const upward: string[] = [];
    for (const [file, targets] of graph) {
      const from = topLevel(file);
      for (const target of targets) {
        const to = topLevel(target);
        if (to !== from && floorOf(to) >= floorOf(from)) upward.push(`${rel(file)} -> ${rel(target)}`);
      }
    }
    expect(upward).toEqual([]);
  });

  it('no import cycle between modules', () => {
    const cycles: string[] = [];
    const state = new Map<string, 'open' | 'done'>();
    const path: string[] = [];
    const visit = (file: string) => {
      state.set(file, 'open');
      path.push(file);
      for (const target of graph.get(file) ?? []) {
        if (state.get(target) === 'open') cycles.push([...path.slice(path.indexOf(target)), target].map(rel).join(' -> '));
        else if (!state.has(target) && graph.has(target)) visit(target);
      }
      path.pop();
      state.set(file, 'done');
    };
    for (const file of files) if (!state.has(file)) visit(file);
    expect(cycles).toEqual([]);
  });

  it('every import names a file that exists', () => {
    const missing = [...graph].flatMap(([file, targets]) => targets.filter((target) => !graph.has(target)).map((target) => `${rel(file)} -> ${rel(target)}`));
    expect(missing).toEqual([]);
  });

  it('no source file over 400 lines, no test file over 800', () => {
    const lines = (file: string) => readFileSync(file, 'utf8').split('\n').length - 1;
    const long = [
      ...files.filter((file) => lines(file) > 400),
      ...sourceFiles(join(ROOT, 'test'), /\.ts$/).filter((file) => lines(file) > 800),
    ].map((file) => `${rel(file)} (${lines(file)} lines)`);
    expect(long).toEqual([]);
  });
});
