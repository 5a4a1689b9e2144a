import type { z } from 'zod';
import type { FieldIssue } from '../errors.js';
import { formatFieldPath } from './field-path.js';

const NOUNS: Record<string, string> = {
  object: 'an object',
  record: 'an object',
  array: 'a list',
  string: 'a string',
  number: 'a number',
  int: 'a whole number',
  boolean: 'true or false',
};

function allowed(values: readonly unknown[]): string {
  return values.map((value) => JSON.stringify(value)).join(' or ');
}

/**
 * Turns zod issues into field issues: one per problem, each with its path, and a message built
 * only from what the schema expects — the submitted value is never repeated. Parse with
 * `reportInput: true` so a missing field can be told apart from a wrong one.
 */
export function toFieldIssues(issues: readonly z.core.$ZodIssue[], base: readonly PropertyKey[] = []): FieldIssue[] {
  const out: FieldIssue[] = [];
  for (const issue of issues) {
    const path = [...base, ...issue.path];
    const missing = 'input' in issue && issue.input === undefined && issue.code !== 'custom';
    switch (issue.code) {
      case 'unrecognized_keys':
        for (const key of issue.keys) out.push({ path: formatFieldPath([...path, key]), message: 'unknown field' });
        break;
      case 'invalid_union': {
        const { discriminator, options } = issue as { discriminator?: string; options?: unknown[] };
        const input = (issue as { input?: unknown }).input;
        const absent = typeof input === 'object' && input !== null && discriminator !== undefined && !(discriminator in input);
        if (discriminator !== undefined && options !== undefined) {
          out.push({ path: formatFieldPath(path), message: `${absent ? 'required: ' : 'must be '}${allowed(options)}` });
        } else {
          out.push({ path: formatFieldPath(path), message: missing ? 'required' : issue.message });
        }
        break;
      }
      case 'invalid_type':
        out.push({
          path: formatFieldPath(path),
          message: missing ? 'required' : issue.message.startsWith('Invalid input') ? `must be ${NOUNS[issue.expected] ?? issue.expected}` : issue.message,
        });
        break;
      case 'invalid_value':
        out.push({
          path: formatFieldPath(path),
          message: missing ? 'required' : issue.message.startsWith('Invalid') ? `must be ${allowed(issue.values)}` : issue.message,
        });
        break;
      default:
        out.push({ path: formatFieldPath(path), message: missing ? 'required' : issue.message });
    }
  }
  return out;
}
