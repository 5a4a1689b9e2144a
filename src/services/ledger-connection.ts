import { isAbsolute } from 'node:path';
import { isLoopbackHost } from '../config/schema-parts.js';
import { capabilityKind } from '../credentials/capability.js';
import { readPrivateFile } from '../credentials/private-file.js';
import { UsageError, UserError } from '../errors.js';
import { createLedgerClient, type LedgerClient } from '../ledger/ledger-client.js';

/**
 * Where a server-bound command finds the ledger: an explicit base URL plus the absolute path of
 * a private file holding a capability ("manual mode", spec §5.6). The capability is never an
 * argument or an environment variable, so it stays out of shell history and process listings.
 */
export interface LedgerTarget {
  readonly url: string;
  readonly tokenFile: string;
}

/**
 * Checks a ledger base URL and returns it without a trailing slash. http is allowed only to a
 * loopback address: over anything else the bearer capability would cross the network in clear.
 * The URL is never echoed in these errors (a pasted one might carry a password).
 */
export function ledgerBaseUrl(raw: string): string {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw invalidUrl('is not a URL');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw invalidUrl('must start with http:// or https://');
  if (url.username !== '' || url.password !== '' || raw.includes('?') || raw.includes('#')) {
    throw invalidUrl('must not contain credentials, a query or a fragment');
  }
  if (url.protocol === 'http:' && !isLoopbackHost(url.hostname)) {
    throw invalidUrl('may use plain http:// only on a loopback address (127.0.0.1, ::1, localhost); use https:// for any other host');
  }
  return `${url.origin}${url.pathname}`.replace(/\/+$/, '');
}

function invalidUrl(why: string): UsageError {
  return new UsageError('ledger_url_invalid', `--url ${why}.`, {
    nextStep: 'Pass the ledger base URL, for example --url http://127.0.0.1:7400.',
  });
}

/** Reads the capability from its private file, descriptor-safely; errors never show content. */
export async function readLedgerToken(tokenFile: string): Promise<string> {
  if (!isAbsolute(tokenFile)) {
    throw new UsageError('token_file_not_absolute', 'The --token-file path must be absolute; got a relative path.', {
      nextStep: 'Pass the full path of the capability file, for example --token-file "$PWD/admin.capability".',
    });
  }
  const token = await readPrivateFile(tokenFile, 'ledger token');
  if (capabilityKind(token) === null) {
    throw new UserError('token_file_invalid', `The ledger token file ${tokenFile} does not hold a lexec capability.`, {
      nextStep: 'Point --token-file at a capability file written by lexec (the ledger admin_capability_path, or a file from `lexec ledger credentials create`).',
    });
  }
  return token;
}

/** A ledger client for a server-bound command: URL checked first, then the token read. */
export async function connectLedger(target: LedgerTarget): Promise<LedgerClient> {
  const url = ledgerBaseUrl(target.url);
  const token = await readLedgerToken(target.tokenFile);
  return createLedgerClient({ url, token });
}
