import { formatFieldPath } from '../../src/config/field-path.js';

/*
 * JSON text nested many levels deep, for the nesting bound (src/config/json-depth.ts): a body of
 * a few KiB nested thousands deep once overflowed the stack behind the parser (issue 24 item 7).
 */

/** One level: an object (value under `key`, after `siblings` other members) or an array (item after `siblings` others). */
export interface Level {
  readonly kind: 'object' | 'array';
  readonly key: string;
  readonly siblings: number;
}

export type Shape = 'object' | 'array' | 'mixed';

/** Levels of a plain shape: `{"a":{"a":…}}`, `[[…]]`, or objects and arrays alternating. */
export function shapeLevels(shape: Shape, depth: number, key = 'a'): Level[] {
  return Array.from({ length: depth }, (_, index) => ({ kind: shape === 'mixed' ? (index % 2 === 0 ? 'object' : 'array') : shape, key, siblings: 0 }));
}

/** The JSON text of `levels` around `leaf` (itself JSON text), built without recursion. */
export function nestedJson(levels: readonly Level[], leaf = '1'): string {
  const open = levels.map((level) => {
    const before = Array.from({ length: level.siblings }, (_, index) => (level.kind === 'array' ? '0,' : `"s${String(index)}":0,`)).join('');
    return level.kind === 'array' ? `[${before}` : `{${before}${JSON.stringify(level.key)}:`;
  });
  const close = levels.map((level) => (level.kind === 'array' ? ']' : '}')).reverse();
  return `${open.join('')}${leaf}${close.join('')}`;
}

/** The field path lexec names for `levels` nested deeper than `bound`: the path of level bound + 1. */
export function tooDeepPath(levels: readonly Level[], bound: number): string {
  return formatFieldPath(levels.slice(0, bound).map((level) => (level.kind === 'array' ? level.siblings : level.key)));
}
