const PLAIN_KEY = /^[A-Za-z_][A-Za-z0-9_-]{0,39}$/;

/**
 * Renders a path like `providers.spend_ceiling.amount_units` or `execution_targets[0].presets[2]`.
 * A key that is not a short plain name (it came from the input, so it could be a pasted secret)
 * is shown as `[?]` rather than echoed.
 */
export function formatFieldPath(path: readonly PropertyKey[]): string {
  let out = '';
  for (const segment of path) {
    if (typeof segment === 'number') out += `[${segment}]`;
    else if (typeof segment === 'string' && PLAIN_KEY.test(segment)) out += out === '' ? segment : `.${segment}`;
    else out += '[?]';
  }
  return out === '' ? '(document)' : out;
}
