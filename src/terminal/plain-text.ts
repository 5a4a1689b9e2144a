/*
 * Free text that came from a server (an agent's purpose, names, a provider's message) made safe
 * for a terminal: control characters removed, so an agent cannot write terminal escapes into an
 * operator's terminal through a purpose string.
 */

// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/g;

/** Text from a server made safe for a terminal. */
export function plain(text: string): string {
  return text.replace(CONTROL, '');
}
