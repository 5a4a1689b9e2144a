import { isAbsolute } from 'node:path';
import { isLoopbackHost } from '../config/schema-parts.js';
import { capabilityKind } from '../credentials/capability.js';
import { readPrivateFile } from '../credentials/private-file.js';
import { UsageError, UserError } from '../errors.js';
import { readCaFile } from '../http/tls-trust.js';
import { createLedgerClient, type LedgerClient } from '../ledger/client/ledger-client.js';
import type { StackAgentRef } from '../ledger/client/agent-choice.js';
import type { LedgerConnector, LedgerRole } from '../ledger/client/ledger-connector.js';
import { chooseLedgerTarget, readHandoffCredential, type ActiveStack, type ServerTargetRequest } from './locate-stack.js';

/**
 * What a server-bound ledger command was told about its ledger: the selected profile (its
 * running stack's handoff gives endpoint and credential together), or `--url` plus
 * `--token-file` ("manual mode", spec §5.6). Resolved in one place: `chooseLedgerTarget`.
 * The capability is never an argument or an environment variable, so it stays out of shell
 * history and process listings.
 */
export type LedgerTarget = ServerTargetRequest;

export type { LedgerRole };

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

/**
 * A ledger client for a server-bound command presenting the capability of `role`. Manual mode:
 * URL checked first, then the token file read. Profile mode: the running stack's handoff names
 * both, and refusals are explained in terms of the stack rather than of flags not given.
 */
export async function connectLedger(target: LedgerTarget, role: LedgerRole): Promise<LedgerClient> {
  const choice = await chooseLedgerTarget(target);
  const caCertificate = target.caFile === undefined ? undefined : await readCaFile(target.caFile, '--ca-file');
  const trust = caCertificate === undefined ? {} : { caCertificate };
  if (choice.mode === 'manual') {
    const url = ledgerBaseUrl(choice.url);
    const token = await readLedgerToken(choice.tokenFile);
    return createLedgerClient({ url, token, reloadToken: () => readLedgerToken(choice.tokenFile), ...trust });
  }
  return connectStackLedger(choice.stack, role, caCertificate);
}

/** What the ledger verbs are given: connects for the role a verb asks for, when it asks. */
export function ledgerConnector(target: LedgerTarget): LedgerConnector {
  return (role) => connectLedger(target, role);
}

/** The running stack's own local agent (the one `lexec run` spends as); null in manual mode. */
export async function stackAgent(target: LedgerTarget): Promise<StackAgentRef | null> {
  const choice = await chooseLedgerTarget(target);
  return choice.mode === 'manual' ? null : (choice.stack.handoff.agent ?? null);
}

/** The trust a running stack's ledger asks of its clients: the handoff's `ca_file` (an https ledger), as `caCertificate`. */
export async function stackLedgerTrust(stack: ActiveStack): Promise<{ caCertificate?: string }> {
  const caFile = stack.handoff.ledger.ca_file;
  return caFile === undefined ? {} : { caCertificate: await readCaFile(caFile, 'ledger.ca_file') };
}

/** A client of a running stack's ledger, presenting the handoff's credential for `role`. */
export async function connectStackLedger(stack: ActiveStack, role: LedgerRole, caCertificate?: string): Promise<LedgerClient> {
  const token = await readHandoffCredential(stack, role);
  const reloadToken = () => readHandoffCredential(stack, role);
  // The CA given (--ca-file), else the profile's (an executor host's remote ledger over https).
  const caFile = stack.handoff.ledger.ca_file;
  const ca = caCertificate ?? (caFile === undefined ? undefined : await readCaFile(caFile, 'ledger.ca_file'));
  const trust = ca === undefined ? {} : { caCertificate: ca };
  return withStackHints(createLedgerClient({ url: ledgerBaseUrl(stack.handoff.ledger.endpoint), token, reloadToken, ...trust }), stack.paths.name);
}

/** Replaces next steps that talk about --url / --token-file with ones about the profile's stack. */
function stackHint(error: unknown, profile: string): unknown {
  if (!(error instanceof UserError)) return error;
  const check = `\`lexec stack status --profile ${profile}\` shows its components; \`lexec stack logs --component ledger --profile ${profile}\` its ledger log.`;
  const hints: Record<string, string> = {
    ledger_unreachable: `The ledger of profile "${profile}"'s running stack does not answer. ${check}`,
    ledger_bad_response: `The handoff of profile "${profile}" points at something that is not its ledger. ${check}`,
    ledger_unauthorized: `The ledger of profile "${profile}" refused the stack's own credential; restart the stack (\`lexec stack stop --profile ${profile}\`, then \`lexec stack start --profile ${profile}\`).`,
  };
  const nextStep = hints[error.code];
  return nextStep === undefined ? error : new UserError(error.code, error.message, { nextStep, issues: error.issues, exitCode: error.exitCode });
}

function withStackHints(client: LedgerClient, profile: string): LedgerClient {
  const wrapped = Object.entries(client).map(([key, value]) => [
    key,
    typeof value === 'function'
      ? async (...args: unknown[]) => {
          try {
            return await (value as (...a: unknown[]) => Promise<unknown>)(...args);
          } catch (error) {
            throw stackHint(error, profile);
          }
        }
      : value,
  ]);
  return Object.fromEntries(wrapped) as LedgerClient;
}
