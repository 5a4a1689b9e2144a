import type { Readable } from 'node:stream';

/**
 * Whole lines of a child's stream as they arrive (a line split across chunks is joined first),
 * and the JSON ones parsed: the servers log one JSON document per line on stderr.
 */
export function collectJsonLines(stream: Readable): { readonly lines: string[]; readonly events: () => Record<string, unknown>[] } {
  const lines: string[] = [];
  let partial = '';
  stream.setEncoding('utf8');
  stream.on('data', (chunk: string) => {
    const parts = (partial + chunk).split('\n');
    partial = parts.pop() ?? '';
    lines.push(...parts.filter(Boolean));
  });
  const events = () =>
    lines.flatMap((line) => {
      try {
        return [JSON.parse(line) as Record<string, unknown>];
      } catch {
        return [];
      }
    });
  return { lines, events };
}
