import { factsOf } from './checker/facts.ts';
import { mergeExecutors, readExecutor, readLedger } from './checker/read-databases.ts';
import { readSources } from './checker/read-sandbox.ts';
import { findings, type InvariantReport } from './checker/report.ts';
import { checkArtifactFiles } from './checker/rules-artifacts.ts';
import { checkAudit } from './checker/rules-audit.ts';
import { checkEvents } from './checker/rules-events.ts';
import { checkAuthorizations } from './checker/rules-authorizations.ts';
import { checkExecutionCounts, checkLedgerCounts } from './checker/rules-counts.ts';
import { checkLifecycle } from './checker/rules-lifecycle.ts';
import { checkMoney } from './checker/rules-money.ts';
import { checkProvider } from './checker/rules-provider.ts';

export type { InvariantReport, Rule, Violation } from './checker/report.ts';

/*
 * The money rules, checked by an oracle that shares no code with the system under test (issue 14
 * item 1). Neither this file nor any under checker/ imports anything from src/ or test/support/
 * (a test reads every file's imports, and an eslint `no-restricted-imports` override refuses any
 * but `node:*`, better-sqlite3 and the checker's own files): it reads the ledger's and the
 * executor's SQLite files read-only with its own SQL (checker/read-databases.ts), what the
 * sandbox provider received (checker/read-sandbox.ts) and the artifact files, and knows the rules
 * from the spec and the migrations, not from the implementation. The rules, by what they judge:
 *   checker/rules-amounts.ts         amounts stored as integers (read with the schema)
 *   checker/rules-provider.ts        what reached the provider
 *   checker/rules-authorizations.ts  the ledger's authorizations
 *   checker/rules-money.ts           holds, settlements, receipts, a human's resolutions
 *   checker/rules-lifecycle.ts       every execution's end
 *   checker/rules-artifacts.ts       the artifact files
 *   checker/rules-audit.ts           the ledger's audit trail of operator actions
 *   checker/rules-events.ts          the ledger's events outbox
 *   checker/rules-counts.ts          the counts kept for the metrics
 *
 * Rule ids are stable (docs/reliability.md lists what each reads). Every rule runs whatever the
 * others find. Relative imports name their `.ts` file: bench/proof/driver.mjs loads the checker
 * with Node's type stripping, which resolves no other extension.
 */

/** One executor's files: its database, what its provider received, its artifacts. */
export interface ExecutorInputs {
  readonly executorDatabase: string;
  /** The sandbox's `--submissions-log` (JSON lines); null when the run had none. */
  readonly submissionsLog: string | null;
  /** The sandbox's `--jobs-file` (JSON lines, job-journal.ts); null or absent when the run had none. */
  readonly sandboxJobsFile?: string | null;
  readonly artifactRoot: string;
}

export interface InvariantInputs extends ExecutorInputs {
  readonly ledgerDatabase: string;
}

/** One ledger and every executor that spends through it (issue 29: executors on several hosts), each with its own provider. */
export interface InvariantInputsAcrossHosts {
  readonly ledgerDatabase: string;
  readonly executors: readonly ExecutorInputs[];
}

/**
 * Every rule over one run's files. `counts.submissions` is the submissions with a request id (a
 * job created) in the submissions log, or in the jobs file when there is no log.
 */
export function checkInvariants(inputs: InvariantInputs): InvariantReport {
  return checkInvariantsAcrossHosts({ ledgerDatabase: inputs.ledgerDatabase, executors: [inputs] });
}

/**
 * Every rule over one ledger and several executors: the money, lifecycle, audit and event rules
 * over the ledger and all the executors' rows together (each authorization is one executor's),
 * the provider rules per executor against its own provider's records, the artifact files per
 * executor under its own root. Counts add up over the executors.
 */
export function checkInvariantsAcrossHosts(inputs: InvariantInputsAcrossHosts): InvariantReport {
  const { violations, fail } = findings();
  // Every file is opened and read before any rule runs, as one pass over stacks at rest.
  const ledger = readLedger(inputs.ledgerDatabase, fail);
  const hosts = inputs.executors.map((host) => ({ host, rows: readExecutor(host.executorDatabase, fail), sources: readSources(host) }));
  const facts = factsOf(ledger, mergeExecutors(hosts.map((each) => each.rows)), hosts.flatMap((each) => each.sources));

  for (const each of hosts) checkProvider(factsOf(ledger, each.rows, each.sources), fail);
  checkAuthorizations(facts, fail);
  checkMoney(facts, fail);
  checkLifecycle(facts, fail);
  for (const each of hosts) checkArtifactFiles(each.rows.artifacts, each.host.artifactRoot, fail);
  checkAudit(facts, fail);
  checkEvents(facts, fail);
  checkLedgerCounts(facts, fail);
  for (const each of hosts) checkExecutionCounts(each.rows, fail);

  return {
    violations,
    counts: {
      executions: facts.executions.length,
      attempts: facts.attempts.length,
      submissions: hosts.reduce((sum, each) => sum + (each.sources[0]?.submissions.filter((line) => line.request_id !== null).length ?? 0), 0),
      settlements: facts.settlements.length,
      releases: facts.releases.length,
      reconciliations: facts.records.length,
      artifacts: facts.artifacts.length,
    },
  };
}
