import { capabilityDigest, digestLookup, digestsEqual } from '../../credentials/capability.js';
import { BugError, UserError } from '../../errors.js';
import { credentialStanding, EXECUTOR_CREDENTIAL_KINDS, executorCredentialId, isAccepted, refusedFrom, type ExecutorCredentialKind } from '../domain/credential-standing.js';
import type { ExecutorConfig } from '../config/executor-config-schema.js';
import type { CredentialStore } from '../store/credential-store.js';

/** The capabilities the configuration names (managed files or explicit secret files); null: none configured. */
export type ConfiguredCapabilities = Readonly<Record<'caller' | 'reconciliation', string | null>> & { readonly metrics?: string | null };

export interface RegistrationContext {
  readonly now: number;
  /** What the operator does about a configured capability that is refused (rotate it, or replace the file). */
  readonly nextStep: (kind: ExecutorCredentialKind) => string;
}

export interface RegistrationOutcome {
  /** Credentials registered by this start (a configured capability the table did not hold yet). */
  readonly registered: readonly { readonly credentialId: string; readonly kind: ExecutorCredentialKind }[];
  /** Credentials revoked because the configuration no longer names them and no rotation's grace covers them. */
  readonly superseded: readonly string[];
}

/**
 * Brings the credential table in line with the configuration at start, in one transaction. A
 * configured capability the table does not hold is registered (by digest). One the table holds as
 * revoked, or past its grace, fails the start closed: the executor would refuse the very
 * capability its clients are given. An active credential of the same kind that the configuration
 * no longer names is revoked, unless a rotation gave it a grace that is still running: replacing a
 * configured file and restarting (explicit mode's rotation) ends the old capability as it always
 * did, and an explicit executor configured without a reconciliation capability admits nobody there.
 */
export function registerConfiguredCredentials(store: CredentialStore, configured: ConfiguredCapabilities, context: RegistrationContext): RegistrationOutcome {
  const tokens = EXECUTOR_CREDENTIAL_KINDS.map((kind) => configured[kind] ?? null).filter((token) => token !== null);
  if (new Set(tokens).size !== tokens.length) {
    throw new UserError('configured_credentials_not_distinct', 'Two of the caller, reconciliation and metrics capabilities configured are the same capability; they must differ.', {
      nextStep: 'Give each route a capability of its own kind (caller, reconciliation, metrics), then start again.',
    });
  }
  return store.transaction(() => {
    const registered: { credentialId: string; kind: ExecutorCredentialKind }[] = [];
    const superseded: string[] = [];
    for (const kind of EXECUTOR_CREDENTIAL_KINDS) {
      const token = configured[kind] ?? null;
      const credentialId = token === null ? null : registerOne(store, kind, token, context);
      if (credentialId?.registered === true) registered.push({ credentialId: credentialId.id, kind });
      superseded.push(...store.supersede(kind, credentialId?.id ?? null, context.now));
    }
    return { registered, superseded };
  });
}

function registerOne(store: CredentialStore, kind: ExecutorCredentialKind, token: string, context: RegistrationContext): { id: string; registered: boolean } {
  const digest = capabilityDigest(token);
  const lookup = digestLookup(digest);
  const row = store.byLookup(lookup);
  if (row === undefined) {
    const id = executorCredentialId(kind, lookup);
    store.insert({ credentialId: id, kind, lookup, digest, at: context.now });
    return { id, registered: true };
  }
  // Two different 256-bit capabilities whose digests share their first 64 bits: not in practice.
  if (!digestsEqual(row.digest, digest)) throw new BugError('two capability digests share their lookup prefix');
  if (row.kind !== kind) {
    throw new UserError('configured_credentials_not_distinct', `The configured ${kind} capability is registered as the executor's ${row.kind} capability (${row.credentialId}); the two must differ.`, {
      nextStep: context.nextStep(kind),
    });
  }
  if (!isAccepted(credentialStanding(row, context.now))) {
    const when = new Date(refusedFrom(row) ?? 0).toISOString();
    const revoked = row.status === 'revoked' && row.revokedAt === refusedFrom(row);
    const what = revoked ? `was revoked at ${when}` : `stopped being accepted at ${when}, the end of its rotation's grace`;
    throw new UserError('configured_credential_revoked', `The configured ${kind} capability (credential ${row.credentialId}) ${what}; the executor does not start with a capability it would refuse.`, {
      nextStep: context.nextStep(kind),
    });
  }
  return { id: row.credentialId, registered: false };
}

/**
 * How an operator replaces a configured capability of `kind`: a managed executor rotates it (a new
 * file, the old one refused at once or after a grace) — its metrics capability through the stack,
 * which rotates it at the ledger too; an explicit one is given a new capability in the file it
 * names and restarted (the start revokes the one no longer configured).
 */
export function replacementNextStep(config: ExecutorConfig, kind: ExecutorCredentialKind, configPath: string | undefined): string {
  const { credentials } = config;
  if (credentials.mode === 'managed' && kind === 'metrics') {
    // `executor credentials rotate` refuses this role: the capability is shared with the ledger and rotated at both.
    return 'The metrics capability is shared with the ledger: `lexec stack credentials rotate --role metrics` replaces it at both servers; then start again.';
  }
  if (credentials.mode === 'managed') {
    return `Rotate it: \`lexec executor credentials rotate --config ${configPath ?? '<this executor configuration>'} --role ${kind}\` writes a new ${credentials.state_dir}/${kind}.capability; then start again.`;
  }
  const reference = credentials[kind];
  const where = reference?.store === 'file' ? reference.path : `the file credentials.${kind} names`;
  return `Write a new ${kind} capability (lexec_${kind}_ and 43 random base64url characters) to ${where} (0600), give it to its clients, then start the executor again: the start registers it and revokes the one it replaces.`;
}
