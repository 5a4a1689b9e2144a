import { X509Certificate } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { isAbsolute } from 'node:path';
import { Agent as HttpsAgent } from 'node:https';
import { errorCode, UserError } from '../errors.js';

/*
 * How a lexec client trusts a server over HTTPS: the one place that makes the dispatcher. A
 * configured CA (`ca_file`, its PEM text as the clients' `caCertificate`) is the only trust
 * anchor of that client — verification is never skipped, and the system's roots do not apply.
 *
 * Node's global fetch takes no CA per call, and a dispatcher of the undici package does not fit
 * the undici bundled inside Node (their handler interfaces differ across majors), so a client
 * with a CA fetches through the undici package's own fetch with its Agent; one without uses the
 * global fetch as before.
 */

/** The fetch a client calls: the global one, or one that trusts the given CA only. */
export type ClientFetch = typeof globalThis.fetch;

/** Largest CA file read. */
const MAX_CA_BYTES = 64 * 1024;

/**
 * The fetch of a client that verifies its server against `caCertificate` (PEM); without it, the
 * global fetch (the system's roots; plain http on loopback).
 */
export function trustingFetch(caCertificate: string | undefined): ClientFetch {
  if (caCertificate === undefined) return globalThis.fetch;
  // Loaded on the first call: most commands never speak TLS, and every one loads the clients.
  let made: Promise<{ fetch: typeof import('undici').fetch; dispatcher: import('undici').Agent }> | undefined;
  const make = async () => {
    const undici = await import('undici');
    return { fetch: undici.fetch, dispatcher: new undici.Agent({ connect: { ca: caCertificate, rejectUnauthorized: true } }) };
  };
  // undici's own Request/Response are those of the WHATWG standard the global fetch also follows.
  // lexec's clients fetch by URL string only.
  const trusted = async (input: string | URL, init?: RequestInit) => {
    made ??= make();
    const { fetch, dispatcher } = await made;
    return fetch(input, { ...(init as Parameters<typeof fetch>[1]), dispatcher });
  };
  return trusted as unknown as ClientFetch;
}

/**
 * The keep-alive agent of a node:https client (the executor's ledger gateway) that verifies its
 * server against `caCertificate` (PEM) only; without it, the system's roots.
 */
export function trustingHttpsAgent(caCertificate: string | undefined): HttpsAgent {
  return new HttpsAgent({ keepAlive: true, ...(caCertificate === undefined ? {} : { ca: caCertificate, rejectUnauthorized: true }) });
}

/** TLS failures of a connection, by the code Node gives them, in the operator's words. */
const TLS_FAILURES: Record<string, string> = {
  ERR_TLS_CERT_ALTNAME_INVALID: 'its certificate does not name this host (name mismatch)',
  CERT_HAS_EXPIRED: 'its certificate has expired',
  CERT_NOT_YET_VALID: 'its certificate is not valid yet',
  UNABLE_TO_VERIFY_LEAF_SIGNATURE: 'its certificate is not signed by the configured CA',
  UNABLE_TO_GET_ISSUER_CERT: 'its certificate is not signed by the configured CA',
  UNABLE_TO_GET_ISSUER_CERT_LOCALLY: 'its certificate is not signed by the configured CA',
  SELF_SIGNED_CERT_IN_CHAIN: 'its certificate is not signed by the configured CA',
  DEPTH_ZERO_SELF_SIGNED_CERT: 'its certificate is self-signed, not signed by the configured CA',
  CERT_SIGNATURE_FAILURE: 'its certificate is not signed by the configured CA',
  CERT_REVOKED: 'its certificate is revoked',
  ERR_SSL_WRONG_VERSION_NUMBER: 'it does not speak TLS (is it plain http://?)',
  EPROTO: 'the TLS handshake failed (is it plain http://?)',
};

function causeCodes(error: unknown, depth = 0): string[] {
  if (depth > 4 || typeof error !== 'object' || error === null) return [];
  const own = 'code' in error && typeof error.code === 'string' ? [error.code] : [];
  const nested = 'cause' in error ? causeCodes(error.cause, depth + 1) : [];
  return [...own, ...nested];
}

/**
 * Why a server was not trusted, when a fetch failed on TLS verification: a sentence naming the
 * failure (name mismatch, expired, not signed by the CA); null for any other failure.
 */
export function tlsFailure(error: unknown): { readonly code: string; readonly why: string } | null {
  for (const code of causeCodes(error)) {
    const why = TLS_FAILURES[code];
    if (why !== undefined) return { code, why };
  }
  return null;
}

/**
 * Reads a CA certificate file (`ca_file`): an absolute path to a PEM certificate that is a CA.
 * `field` names the configuration field or flag in errors. The file is public; no mode check.
 */
export async function readCaFile(path: string, field: string): Promise<string> {
  const issue = (message: string) => [{ path: field, message }];
  if (!isAbsolute(path)) {
    throw new UserError('tls_ca_file_invalid', `${field} must be an absolute path.`, { nextStep: 'Pass the full path of the team CA certificate (ca.pem from `lexec stack tls init`).', issues: issue('must be an absolute path') });
  }
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    const code = errorCode(error);
    const message = `the CA file ${path} ${code === 'ENOENT' ? 'does not exist' : `cannot be read (${code ?? 'error'})`}`;
    throw new UserError('tls_ca_file_invalid', `${field}: ${message}.`, { nextStep: 'Copy the team CA certificate (ca.pem from `lexec stack tls init`) to this host and point at it.', issues: issue(message) });
  }
  let certificate: X509Certificate | null;
  try {
    certificate = text.length <= MAX_CA_BYTES ? new X509Certificate(text) : null;
  } catch {
    certificate = null;
  }
  if (certificate?.ca !== true) {
    const message = `the CA file ${path} does not hold a PEM CA certificate`;
    throw new UserError('tls_ca_file_invalid', `${field}: ${message}.`, { nextStep: 'Point it at ca.pem from `lexec stack tls init`, not at a server certificate or a key.', issues: issue(message) });
  }
  return text;
}
