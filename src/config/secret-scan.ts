import { containsSecretShape } from '../domain/secret-text.js';
import type { FieldIssue } from '../errors.js';
import { formatFieldPath } from './field-path.js';

/**
 * Shapes of raw secrets that must never sit in a configuration document: lexec capabilities,
 * provider keys, authorization header values, private keys, and URLs carrying a password —
 * checked against whole values (`Key abc12345` alone is a secret, inside prose it may not be) —
 * plus the free-text shapes (src/domain/secret-text.ts) anywhere in a value: an API key or a
 * bearer token inside a label is as much a leak as in a prompt.
 */
const SECRET_SHAPES: readonly RegExp[] = [
  /^lexec_[a-z]+_[A-Za-z0-9_-]{20,}$/,
  /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}:[0-9a-f]{32}$/i,
  /^(?:Key|Bearer|Basic)\s+\S{8,}/,
  /-----BEGIN [A-Z ]*PRIVATE KEY-----/,
  /^[a-z][a-z0-9+.-]*:\/\/[^/\s:@]*:[^/\s@]+@/i,
];

export function looksLikeSecret(value: string): boolean {
  return SECRET_SHAPES.some((shape) => shape.test(value)) || containsSecretShape(value);
}

/**
 * Walks a parsed JSON document and reports every string value (and key) shaped like a raw
 * secret, by path only. Defence in depth: the schema has no field for a secret, but a secret
 * pasted into a free-text field would otherwise be stored and shown.
 */
export function findRawSecrets(document: unknown): FieldIssue[] {
  const issues: FieldIssue[] = [];
  const message = 'looks like a raw secret; reference secrets by secret coordinates ({"store":"keychain",…} or {"store":"file",…})';
  const visit = (value: unknown, path: PropertyKey[]): void => {
    if (typeof value === 'string') {
      if (looksLikeSecret(value)) issues.push({ path: formatFieldPath(path), message });
    } else if (Array.isArray(value)) {
      value.forEach((item, index) => {
        visit(item, [...path, index]);
      });
    } else if (typeof value === 'object' && value !== null) {
      for (const [key, item] of Object.entries(value)) {
        if (looksLikeSecret(key)) issues.push({ path: formatFieldPath([...path, key]), message });
        visit(item, [...path, key]);
      }
    }
  };
  visit(document, []);
  return issues;
}
