import { CREDENTIAL_KINDS } from '../credentials/capability.js';

/*
 * Secret-shaped text in free-text fields (issue 16 item 5). An authorization's purpose, a
 * decision's reason, a reconciliation note and a prompt are stored, shown to other people and
 * (a prompt) sent to a provider: a capability or provider key pasted into one would leak. Every
 * surface that accepts such a field refuses text containing one of these shapes, with the
 * field's path and never the text; and text already stored by an older version is shown with
 * the secret-shaped part replaced.
 *
 * Unlike the configuration scan (src/config/secret-scan.ts), which checks whole values, these
 * shapes match anywhere in the text: "my key is lexec_agent_…" must be refused too. They are
 * kept narrow so that ordinary prose is never refused: a lexec capability of a known kind with
 * at least 40 of its 43 random characters, a fal key (`<uuid>:<32 hex>`), a PEM private key.
 */
const SECRET_SHAPES: readonly RegExp[] = [
  // The 43 random base64url characters of a capability (40 or more: one cut short by a few is a
  // leak too), at least one of them a digit or a capital: a snake_case name such as
  // `lexec_executor_credentials_bootstrap_managed` is prose, not a capability.
  new RegExp(String.raw`lexec_(?:${CREDENTIAL_KINDS.join('|')})_(?=[A-Za-z0-9_-]*[A-Z0-9])[A-Za-z0-9_-]{40,}`, 'g'),
  /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}:[0-9a-f]{32}/gi,
  /-----BEGIN [A-Z ]*PRIVATE KEY-----/g,
];

/** The message a refused free-text field carries (built from the rule, never from the text). */
export const SECRET_TEXT_MESSAGE = 'looks like it contains a secret (a lexec capability or a provider key); secrets are never stored as text';

/** The safe reason code a refused free-text field carries on the HTTP surfaces. */
export const SECRET_TEXT_REASON = 'secret_shaped_text';

/** Whether `text` contains a lexec capability, a provider key or a private key anywhere. */
export function containsSecretShape(text: string): boolean {
  return SECRET_SHAPES.some((shape) => {
    shape.lastIndex = 0;
    return shape.test(text);
  });
}

/** `text` with every secret-shaped part replaced by `[redacted]`: for text stored before the refusal existed. */
export function redactSecretShapes(text: string): string {
  return SECRET_SHAPES.reduce((current, shape) => current.replace(shape, '[redacted]'), text);
}
