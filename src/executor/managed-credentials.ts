import { join } from 'node:path';

/*
 * The fixed internal layout of a launcher-managed executor's credentials (spec §1: "fixed
 * internal service references backed by private profile state; derived and never operator
 * input"). `credentials bootstrap-managed` writes these files; `executor serve` reads them.
 * The directory is `credentials.state_dir` of the executor configuration: 0700, files 0600.
 */

/** The capability callers present to the executor (`Authorization: Bearer …`), kind `caller`. */
export const CALLER_CAPABILITY_FILE = 'caller.capability';

/** The executor's own capability at the ledger, kind `executor`. */
export const LEDGER_CAPABILITY_FILE = 'ledger.capability';

/** The capability of the executor's reconciliation route (separate from the caller's), kind `reconciliation`. */
export const RECONCILIATION_CAPABILITY_FILE = 'reconciliation.capability';

/**
 * The capability a Prometheus scraper presents at `GET /metrics`, kind `metrics`; optional (no file:
 * no metrics route). A stack registers the same capability at its ledger (docs/metrics.md).
 */
export const METRICS_CAPABILITY_FILE = 'metrics.capability';

/** The id under which the executor→ledger credential is registered at the ledger. */
export const LEDGER_CREDENTIAL_ID = 'lexec-executor';

export function managedCredentialPaths(stateDir: string) {
  return {
    caller: join(stateDir, CALLER_CAPABILITY_FILE),
    ledger: join(stateDir, LEDGER_CAPABILITY_FILE),
    reconciliation: join(stateDir, RECONCILIATION_CAPABILITY_FILE),
    metrics: join(stateDir, METRICS_CAPABILITY_FILE),
  };
}
