import type { FieldIssue } from '../errors.js';
import { formatFieldPath } from './field-path.js';

/**
 * The deepest nesting of objects and arrays lexec reads in a JSON document (a request body, a
 * configuration or policy file). Real ones nest a handful of levels; without a bound, a body of a
 * few KiB nested thousands deep overflows the stack of every recursive walk after the parse (the
 * duplicate-key scan, zod, JSON.stringify), which answered 500 `internal_error`.
 */
export const MAX_JSON_DEPTH = 32;

/** An open object (the key being read or last read) or array (the index of the current item). */
type Frame = { readonly kind: 'object'; key: string | null; expectKey: boolean } | { readonly kind: 'array'; index: number };

/** A string token's value; a broken one counts as a key lexec never echoes. */
function decodeKey(token: string): string {
  try {
    return JSON.parse(token) as string;
  } catch {
    return '?';
  }
}

/**
 * The path of the first object or array nested deeper than `maxDepth` (the outermost value is
 * depth 1), or null. One pass over the text with an explicit stack — never recursion, whatever
 * the depth — so it runs before any parser or walk that recurses. It tolerates broken JSON (the
 * parser refuses that afterwards); the path is rendered by formatFieldPath, so a key that is not
 * a plain name is shown as `[?]`, never echoed.
 */
export function jsonDepthIssue(text: string, maxDepth = MAX_JSON_DEPTH): FieldIssue | null {
  const stack: Frame[] = [];
  for (let at = 0; at < text.length; at += 1) {
    const char = text[at];
    const top = stack.at(-1);
    if (char === '"') {
      const start = at;
      for (at += 1; at < text.length && text[at] !== '"'; at += 1) if (text[at] === '\\') at += 1;
      if (top?.kind === 'object' && top.expectKey) {
        top.key = decodeKey(text.slice(start, at + 1));
        top.expectKey = false;
      }
    } else if (char === '{' || char === '[') {
      if (stack.length === maxDepth) {
        const path = stack.map((frame) => (frame.kind === 'array' ? frame.index : (frame.key ?? '?')));
        return { path: formatFieldPath(path), message: `is nested more than ${String(maxDepth)} levels deep` };
      }
      stack.push(char === '{' ? { kind: 'object', key: null, expectKey: true } : { kind: 'array', index: 0 });
    } else if (char === '}' || char === ']') {
      stack.pop();
    } else if (char === ',' && top !== undefined) {
      if (top.kind === 'array') top.index += 1;
      else top.expectKey = true;
    }
  }
  return null;
}
