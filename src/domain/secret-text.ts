import { CREDENTIAL_KINDS } from '../credentials/capability.js';

/*
 * Secret-shaped text in free-text fields (issue 16 item 5, widened by issue 24 item 8). An
 * authorization's purpose, a decision's reason, a reconciliation note and a prompt are stored,
 * shown to other people and (a prompt) sent to a provider: a capability, an API key or a bearer
 * token pasted into one would leak. Every surface that accepts such a field refuses text
 * containing one of these shapes, with the field's path and never the text; and text already
 * stored by an older version is shown with the secret-shaped part replaced.
 *
 * Unlike the configuration scan (src/config/secret-scan.ts), which checks whole values, these
 * shapes match anywhere in the text: "my key is lexec_agent_…" must be refused too. They are
 * kept narrow so that ordinary prose is never refused: a prefix a vendor reserves for its keys,
 * or a scheme word (`Bearer`, `Key`, an `Authorization:` header) followed by a token that holds
 * a run of 16 or more letters and digits with at least one of each — random, not a word. The
 * list is documented in docs/decisions.md ("No secret-shaped text stored as data").
 */

/** Characters of a token after a scheme (RFC 9110 token68, plus `:` and `_`). */
const TOKEN_CHAR = '[A-Za-z0-9._~+/=:-]';
/**
 * A random-looking token: 20+ token characters with a digit, a small and a capital letter
 * (base64 and base64url tokens), or one holding a run of 16+ letters and digits with at least one
 * of each (hex and alphanumeric keys). Hyphenated prose ("performance-indicators-2024") is
 * neither. The look-aheads are bounded (64 characters) so a long text stays linear: an unbounded
 * one rescans the rest of the token from every position (a 10,000-character token took 300 ms).
 */
const MIXED_TOKEN = String.raw`(?=${TOKEN_CHAR}{20})(?=${TOKEN_CHAR}{0,63}[0-9])(?=${TOKEN_CHAR}{0,63}[a-z])(?=${TOKEN_CHAR}{0,63}[A-Z])${TOKEN_CHAR}+`;
const RANDOM_RUN = String.raw`${TOKEN_CHAR}*?(?=[A-Za-z0-9]{0,63}[0-9])(?=[A-Za-z0-9]{0,63}[A-Za-z])[A-Za-z0-9]{16,}${TOKEN_CHAR}*`;
const CREDENTIAL = `(?:${MIXED_TOKEN}|${RANDOM_RUN})`;
/**
 * `word` in any case, as schemes and header names are (RFC 9110), while the token's classes stay
 * case-sensitive: the `i` flag would make "a small and a capital letter" mean any letter.
 */
const anyCase = (word: string) => word.replace(/[a-z]/gi, (char) => `[${char.toLowerCase()}${char.toUpperCase()}]`);

interface SecretShape {
  /** What the shape is, for the documentation and the tests; never shown with the text. */
  readonly name: string;
  readonly pattern: RegExp;
}

export const SECRET_SHAPES: readonly SecretShape[] = [
  {
    // The 43 random base64url characters of a capability (40 or more: one cut short by a few is
    // a leak too), at least one of them a digit or a capital: a snake_case name such as
    // `lexec_executor_credentials_bootstrap_managed` is prose, not a capability.
    name: 'lexec capability',
    pattern: new RegExp(String.raw`lexec_(?:${CREDENTIAL_KINDS.join('|')})_(?=[A-Za-z0-9_-]*[A-Z0-9])[A-Za-z0-9_-]{40,}`, 'g'),
  },
  { name: 'fal key (<uuid>:<32 hex>)', pattern: /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}:[0-9a-f]{32}/gi },
  // The whole block when its END line is there (text stored earlier is redacted through it).
  { name: 'PEM private key', pattern: /-----BEGIN ([A-Z ]*)PRIVATE KEY-----(?:[\s\S]*?-----END \1PRIVATE KEY-----)?/g },
  // OpenAI's `sk-…`, `sk-proj-…` and Anthropic's `sk-ant-api03-…`: all hold a digit.
  { name: 'OpenAI or Anthropic API key (sk-…, sk-proj-…, sk-ant-…)', pattern: /\bsk-(?=[A-Za-z0-9_-]{0,63}[0-9])[A-Za-z0-9_-]{20,}/g },
  { name: 'GitHub token (ghp_, gho_, ghu_, ghs_, ghr_)', pattern: /\bgh[pousr]_[A-Za-z0-9]{30,}/g },
  { name: 'GitHub fine-grained token (github_pat_)', pattern: /\bgithub_pat_[A-Za-z0-9_]{30,}/g },
  { name: 'Slack token (xoxb-, xoxp-, xoxa-, xoxs-)', pattern: /\bxox[bpas]-[A-Za-z0-9-]{10,}/g },
  { name: 'AWS access key id (AKIA…, ASIA…)', pattern: /\b(?:AKIA|ASIA)[0-9A-Z]{16}\b/g },
  { name: 'Google API key (AIza…)', pattern: /\bAIza[0-9A-Za-z_-]{35}/g },
  { name: 'JSON Web Token (eyJ….eyJ….…)', pattern: /\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*/g },
  { name: 'Bearer <token>', pattern: new RegExp(String.raw`\b${anyCase('bearer')}\s+${CREDENTIAL}`, 'g') },
  { name: "Key <token> (fal's scheme)", pattern: new RegExp(String.raw`\b${anyCase('key')}\s+${CREDENTIAL}`, 'g') },
  {
    name: 'Authorization: or API-key header with a token',
    pattern: new RegExp(
      String.raw`\b(?:${anyCase('proxy-')})?${anyCase('authorization')}\s*:\s*(?:[A-Za-z][A-Za-z0-9_-]*\s+)?${CREDENTIAL}|\b(?:${anyCase('x-')})?${anyCase('api-key')}\s*:\s*${CREDENTIAL}`,
      'g',
    ),
  },
  // Basic credentials are base64 of `user:password`, often with no digit at all.
  { name: 'Authorization: Basic <credentials>', pattern: /\b(?:Proxy-)?Authorization\s*:\s*Basic\s+[A-Za-z0-9+/]{8,}={0,2}/gi },
];

/** The message a refused free-text field carries (built from the rule, never from the text). */
export const SECRET_TEXT_MESSAGE = 'looks like it contains a secret (a lexec capability, an API key or a bearer token); secrets are never stored as text';

/** The safe reason code a refused free-text field carries on the HTTP surfaces. */
export const SECRET_TEXT_REASON = 'secret_shaped_text';

/** Whether `text` contains a lexec capability, an API key, a bearer token or a private key anywhere. */
export function containsSecretShape(text: string): boolean {
  return SECRET_SHAPES.some(({ pattern }) => {
    pattern.lastIndex = 0;
    return pattern.test(text);
  });
}

/** `text` with every secret-shaped part replaced by `[redacted]`: for text stored before the refusal existed. */
export function redactSecretShapes(text: string): string {
  return SECRET_SHAPES.reduce((current, { pattern }) => current.replace(pattern, '[redacted]'), text);
}
