import type { AttemptRow, AuthorizationRow, ExecutionRow, ExecutorRows, LedgerRows, ReceiptRow, ReleaseRow, ResolutionRow, SettlementRow } from './read-databases.ts';
import type { SubmissionSource } from './read-sandbox.ts';
import { groupBy, units } from './values.ts';

/*
 * Everything the rules read, indexed once: both databases' rows, the provider's records, and the
 * lookups the rules share (by execution, by token, the latest attempt, the images billed).
 */

export interface Facts extends LedgerRows, ExecutorRows {
  readonly sources: readonly SubmissionSource[];
  readonly executionById: ReadonlyMap<string, ExecutionRow>;
  readonly authorizationOf: ReadonlyMap<string, AuthorizationRow>;
  readonly attemptsOf: ReadonlyMap<string, readonly AttemptRow[]>;
  readonly receiptOf: ReadonlyMap<string, ReceiptRow>;
  readonly resolutionOf: ReadonlyMap<string, ResolutionRow>;
  readonly settlementsOfToken: ReadonlyMap<string, readonly SettlementRow[]>;
  readonly releasesOfToken: ReadonlyMap<string, readonly ReleaseRow[]>;
  /** Request ids a submission in any source carried (a job created). */
  readonly submitted: ReadonlySet<string>;
  readonly latestAttempt: (executionId: string) => AttemptRow | undefined;
  /**
   * The images an execution is billed for: those its attempt delivered (the executor keeps its
   * receipt for them as soon as they are stored), else — settled by a human before any delivery
   * was recorded — the images the human billed. Null when neither is recorded.
   */
  readonly billedImages: (executionId: string) => bigint | null;
}

/** A row of the ledger made by (or for) this execution: the same token and execution id. */
export const byExecution = (execution: ExecutionRow) => (row: { token_id: string; execution_id: string | null }) =>
  row.token_id === execution.token_id && row.execution_id === execution.execution_id;

export function factsOf(ledger: LedgerRows, executor: ExecutorRows, sources: readonly SubmissionSource[]): Facts {
  const attemptsOf = groupBy(executor.attempts, (row) => row.execution_id);
  const resolutionOf = new Map(executor.resolutions.map((row) => [row.execution_id, row]));
  const latestAttempt = (executionId: string) => attemptsOf.get(executionId)?.at(-1);
  return {
    ...ledger,
    ...executor,
    sources,
    executionById: new Map(executor.executions.map((row) => [row.execution_id, row])),
    authorizationOf: new Map(ledger.authorizations.map((row) => [row.token_id, row])),
    attemptsOf,
    receiptOf: new Map(executor.receipts.map((row) => [row.execution_id, row])),
    resolutionOf,
    settlementsOfToken: groupBy(ledger.settlements, (row) => row.token_id),
    releasesOfToken: groupBy(ledger.releases, (row) => row.token_id),
    submitted: new Set(sources.flatMap((source) => source.submissions.flatMap((line) => (line.request_id === null ? [] : [line.request_id])))),
    latestAttempt,
    billedImages: (executionId) => units(latestAttempt(executionId)?.delivered_images ?? null) ?? units(resolutionOf.get(executionId)?.images_billed ?? null),
  };
}
