import type { visit as visitJson } from 'jsonc-parser';
import type { FieldIssue } from '../errors.js';
import { formatFieldPath } from './field-path.js';

/**
 * Paths of keys that appear twice in one object. JSON.parse silently keeps the last one, which
 * in a file of spend ceilings and prices — or in an execution request — would hide a mistake, so
 * lexec refuses them. `visit` is jsonc-parser's (passed in: the CLI loads it lazily, servers not).
 */
export function duplicateKeyIssues(text: string, visit: typeof visitJson): FieldIssue[] {
  const objects: Set<string>[] = [];
  const issues: FieldIssue[] = [];
  visit(text, {
    onObjectBegin: () => {
      objects.push(new Set());
    },
    onObjectEnd: () => {
      objects.pop();
    },
    onObjectProperty: (property, _offset, _length, _line, _column, pathSupplier) => {
      const keys = objects.at(-1);
      if (keys?.has(property)) issues.push({ path: formatFieldPath([...pathSupplier(), property]), message: 'appears more than once in its object' });
      keys?.add(property);
    },
  });
  return issues;
}
