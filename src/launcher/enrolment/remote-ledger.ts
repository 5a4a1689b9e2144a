import type { BuildInfo } from '../../build-info.js';
import { UserError } from '../../errors.js';
import { ledgerLineageProblem } from '../../executor/ledger-compatibility.js';
import { readCaFile } from '../../http/tls-trust.js';
import { createLedgerClient, type LedgerClient } from '../../ledger/client/ledger-client.js';
import type { LedgerVersion } from '../../ledger/client/ledger-enrolments-client.js';

/*
 * An executor host's remote ledger (docs/deployment.md "Roles"): a client for it — verifying its
 * https certificate against the profile's `ca_file` when one is set — and the lineage check made
 * before enrolment spends a token and before `stack start` (through `stack doctor`).
 */

export interface RemoteLedger {
  readonly url: string;
  /** Absolute path of the CA certificate (PEM) the ledger's certificate is verified against. */
  readonly caFile: string | null;
}

/** A client of the remote ledger presenting `token`. */
export async function remoteLedgerClient(ledger: RemoteLedger, token: string, reloadToken?: () => Promise<string>): Promise<LedgerClient> {
  const trust = ledger.caFile === null ? {} : { caCertificate: await readCaFile(ledger.caFile, 'ledger.ca_file') };
  return createLedgerClient({ url: ledger.url, token, ...(reloadToken === undefined ? {} : { reloadToken }), ...trust });
}

/** The remote ledger's lineage; refused (a UserError) when it is not this binary's. Unreachable: the client's error (TLS ones included). */
export async function checkRemoteLineage(ledger: RemoteLedger, build: BuildInfo): Promise<LedgerVersion> {
  // /version needs no credential: a placeholder bearer is sent, never a capability.
  const client = await remoteLedgerClient(ledger, 'none');
  const reported = await client.version();
  const problem = ledgerLineageProblem(reported, { pinnedVersion: build.product_version, developmentAllowance: build.build_kind === 'development', self: build });
  if (problem !== null) {
    throw new UserError(problem.code, `The ledger at ${client.url} is of another lineage: ${problem.message}`, {
      nextStep: `Run the same lexec build on the ledger host and on this host (\`lexec version --json\` on both shows product version and commit); nothing was sent to that ledger but a request for its version.`,
    });
  }
  return reported;
}

/**
 * Whether an enrolled executor host can start against its remote ledger: lineage, then its
 * executor→ledger credential on the executor's own probe route, then its agent credential.
 * Throws the first problem (the client's own error when the ledger cannot be reached, TLS included).
 */
export async function checkRemoteLedgerStanding(ledger: RemoteLedger, files: { executor: string; agent: string }, build: BuildInfo): Promise<LedgerVersion> {
  const version = await checkRemoteLineage(ledger, build);
  const { readPrivateFile } = await import('../../credentials/private-file.js');
  const rejected = (which: string, file: string) =>
    new UserError('ledger_credential_rejected', `The ledger at ${ledger.url} refused this host's ${which} credential (${file}): it was revoked there, or this host enrolled at another ledger.`, {
      nextStep: "Ask the ledger host's operator for a new enrolment token and enrol a new profile with it (`lexec stack enrol`); `lexec ledger credentials list` on the ledger host shows what was revoked.",
    });
  for (const [which, file] of [
    ['executor', files.executor],
    ['agent', files.agent],
  ] as const) {
    const client = await remoteLedgerClient(ledger, await readPrivateFile(file, `${which} capability`));
    try {
      if (which === 'executor') await client.listAgents();
      else await client.spending();
    } catch (error) {
      if (error instanceof UserError && error.code === 'ledger_unauthorized') throw rejected(which, file);
      throw error;
    }
  }
  return version;
}
