import { isIP } from 'node:net';
import { posix } from 'node:path';
import { z } from 'zod';
import { parseWholeNumber } from '../domain/money.js';
import { containsSecretShape, SECRET_TEXT_MESSAGE, SECRET_TEXT_REASON } from '../domain/secret-text.js';

/** Defined in domain (a price snapshot's amounts use it), offered here beside the other field types. */
export { wholeNumber } from '../domain/whole-number.js';

/*
 * Field types shared by lexec's JSON and TOML documents. Every message here names what is
 * expected and never repeats the submitted value: configuration can hold paths an operator
 * considers private, and a misplaced secret must not be echoed back into a terminal or a log.
 */

export const absolutePath = z
  .string({ error: 'must be an absolute path (a string starting with /)' })
  .refine((value) => posix.isAbsolute(value) && !/[\0\n\r]/.test(value), 'must be an absolute path (a string starting with /)')
  .refine((value) => posix.normalize(value) === value, 'must be a normalised path (no ".", ".." or repeated "/")');

/** IPv4 127.0.0.0/8, IPv6 ::1, or the name localhost. */
export function isLoopbackHost(host: string): boolean {
  const bare = host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
  if (bare === 'localhost') return true;
  if (isIP(bare) === 4) return bare.split('.')[0] === '127';
  if (isIP(bare) === 6) return bare === '::1' || bare === '0:0:0:0:0:0:0:1';
  return false;
}

function parseUrl(value: string): URL | null {
  try {
    return new URL(value);
  } catch {
    return null;
  }
}

/** A URL with one of `schemes`, a host, and no credentials, query or fragment. */
function isPlainUrl(value: string, schemes: readonly string[]): boolean {
  const url = parseUrl(value);
  return (
    url !== null &&
    schemes.includes(url.protocol) &&
    url.hostname !== '' &&
    url.username === '' &&
    url.password === '' &&
    url.search === '' &&
    url.hash === '' &&
    !value.includes('?') &&
    !value.includes('#')
  );
}

export const httpUrl = z
  .string({ error: 'must be an http:// or https:// URL' })
  .refine((value) => isPlainUrl(value, ['http:', 'https:']), 'must be an http:// or https:// URL without credentials, query or fragment');

/**
 * A service endpoint that credentials are sent to: https anywhere, plain http only on a loopback
 * address — a capability must never cross a network in clear.
 */
export const credentialedEndpointUrl = z
  .string({ error: 'must be an https:// URL, or http:// on a loopback address' })
  .refine((value) => {
    if (isPlainUrl(value, ['https:'])) return true;
    return isPlainUrl(value, ['http:']) && isLoopbackHost(new URL(value).hostname);
  }, 'must be an https:// URL, or http:// on a loopback address (credentials never cross a network in clear), without credentials, query or fragment');

export const loopbackHttpUrl = z
  .string({ error: 'must be an http:// URL on a loopback address' })
  .refine(
    (value) => isPlainUrl(value, ['http:']) && isLoopbackHost(new URL(value).hostname),
    'must be an http:// URL on a loopback address (127.0.0.1, ::1 or localhost)',
  );

/** A workflow-engine frontend address: `grpc://host:port` or `grpcs://host:port` (TLS). */
export const grpcUrl = z
  .string({ error: 'must be a grpc:// or grpcs:// URL with host and port' })
  .refine((value) => {
    const url = parseUrl(value);
    return url !== null && isPlainUrl(value, ['grpc:', 'grpcs:']) && url.port !== '' && (url.pathname === '' || url.pathname === '/');
  }, 'must be a grpc:// or grpcs:// URL with host and port and no path, credentials, query or fragment');

/** An exact version like `1.4.1`: a pin, never a range. */
export const exactVersion = z
  .string({ error: 'must be an exact version such as 1.4.1' })
  .regex(/^\d+\.\d+\.\d+$/, 'must be an exact version such as 1.4.1 (no range, no leading v)');

/** A product version as a binary reports it: leading `v` and prerelease suffix included. */
export const productVersion = z
  .string({ error: 'must be a product version such as v0.3.0' })
  .regex(/^v?\d+\.\d+\.\d+(?:-[0-9A-Za-z.-]+)?(?:\+[0-9A-Za-z.-]+)?$/, 'must be an exact product version such as v0.3.0 or v0.3.0-rc.1');

/**
 * Free text a person or an agent writes — a purpose, a reason, a note, a prompt — refused when
 * it contains a secret's shape (src/domain/secret-text.ts). The issue carries
 * `params.reason = "secret_shaped_text"` so a surface can say why without echoing the text.
 */
export function freeText(text: z.ZodString): z.ZodString {
  return text.refine((value) => !containsSecretShape(value), { message: SECRET_TEXT_MESSAGE, params: { reason: SECRET_TEXT_REASON } });
}

/** Whether zod issues include a free-text field refused for its secret's shape. */
export function hasSecretShapedText(issues: readonly z.core.$ZodIssue[]): boolean {
  return issues.some((issue) => issue.code === 'custom' && (issue.params as { reason?: unknown } | undefined)?.reason === SECRET_TEXT_REASON);
}

/** A short identifier: names, namespaces, task queues, policy versions. */
export function identifier(max = 128) {
  return z
    .string({ error: 'must be a name' })
    .regex(new RegExp(`^[A-Za-z0-9][A-Za-z0-9._:@/-]{0,${max - 1}}$`), `must be 1-${max} letters, digits or . _ : @ / - (starting with a letter or digit)`);
}

export const port = z
  .number({ error: 'must be a TCP port number' })
  .int('must be a whole TCP port number')
  .min(0, 'must be a TCP port number (0-65535; 0 picks a free port)')
  .max(65535, 'must be a TCP port number (0-65535; 0 picks a free port)');

/**
 * A server's certificate and private key (PEM files). Read and checked at start
 * (src/http/server-tls.ts); the key file must be private (0600, owned by the server's user).
 */
export const serverTls = z.strictObject({
  certificate_file: absolutePath,
  key_file: absolutePath,
});
export type ServerTlsConfig = z.output<typeof serverTls>;

/** The reason a non-loopback host without `http.tls` is refused with, at the path `http.tls`. */
export const TLS_REQUIRED_REASON = 'tls_required';

/**
 * Where a lexec server listens: loopback unless the operator explicitly allows otherwise, and
 * beyond loopback only over TLS. `allow_non_loopback` still has to be true for a non-loopback
 * host (the operator means it); `tls` is required there in addition, whatever
 * `allow_non_loopback` says: a capability must never cross a network in clear.
 */
export const httpListen = z
  .strictObject({
    host: z.string({ error: 'must be a host name or IP address' }).min(1).default('127.0.0.1'),
    port,
    allow_non_loopback: z.boolean({ error: 'must be true or false' }).default(false),
    tls: serverTls.optional(),
  })
  .superRefine((value, ctx) => {
    if (isLoopbackHost(value.host)) return;
    if (!value.allow_non_loopback) {
      ctx.addIssue({
        code: 'custom',
        path: ['host'],
        message: 'must be a loopback address (127.0.0.1, ::1 or localhost) unless allow_non_loopback is true',
      });
    }
    if (value.tls === undefined) {
      ctx.addIssue({
        code: 'custom',
        path: ['tls'],
        message: `${TLS_REQUIRED_REASON}: a non-loopback host is served over TLS only; set certificate_file and key_file (\`lexec stack tls issue\`)`,
        params: { reason: TLS_REQUIRED_REASON },
      });
    }
  });

/**
 * A whole number in a server's answer (the ledger's and the executor's amounts, counts, sizes):
 * a digit string or a JSON integer, as bigint; never a float. No bounds: the server checked them.
 */
export const answeredWholeNumber = z.union([z.string(), z.number()]).transform((value, ctx) => {
  const parsed = parseWholeNumber(value);
  if (parsed === null) {
    ctx.addIssue({ code: 'custom', message: 'must be a whole number' });
    return z.NEVER;
  }
  return parsed;
});

/**
 * Where a secret lives — never the secret. `keychain` names an item in the OS secret store;
 * `file` names a private file (0600, owned by the executor's user) holding only the secret.
 */
export const secretReference = z.discriminatedUnion(
  'store',
  [
    z.strictObject({ store: z.literal('keychain'), service: identifier(), account: identifier() }),
    z.strictObject({ store: z.literal('file'), path: absolutePath }),
  ],
  { error: 'must be a secret reference: {"store":"keychain",…} or {"store":"file",…}' },
);
export type SecretReference = z.output<typeof secretReference>;
