import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { isAbsolute, relative, resolve } from 'node:path';
import Database from 'better-sqlite3';

/*
 * The money rules, checked by an oracle that shares no code with the system under test (issue 14
 * item 1). It imports nothing from src/ (a test reads its imports, and an eslint
 * `no-restricted-imports` override refuses any but `node:*` and better-sqlite3): it reads the
 * ledger's and the executor's SQLite files read-only with its own SQL (one read transaction per
 * database, so every statement sees one snapshot), what the sandbox provider received and the
 * artifact files, and knows the rules from the spec and the migrations, not from the
 * implementation.
 *
 * What reached the provider comes from either or both of the sandbox's files (each is judged on
 * its own when both are given):
 *   - `submissionsLog` (`--submissions-log`): one JSON line per received `POST /{model}`,
 *     `{"sequence":n,"request_id":string|null,"model":…,"outcome":…,…}`; a line with a null
 *     request id is a submission that created no job (5xx, refusal) and still reached it;
 *   - `sandboxJobsFile` (`--jobs-file`, what a `lexec stack` sandbox keeps in
 *     `state/sandbox-jobs.jsonl`): `{"type":"job","request_id":…,"model":…,…}` per submission that
 *     created a job (accepted, dropped or hung), and `{"type":"cancel","request_id":…,"at":…}`
 *     lines, which are read and otherwise ignored. A torn last line (no newline: the sandbox died
 *     mid-write) is ignored, as the sandbox itself does; it never answered that submission.
 * Either file missing on disk reads as empty. `counts.submissions` is the submissions with a
 * request id (a job created) in the log, or in the jobs file when there is no log.
 *
 * Rule ids are stable (docs/reliability.md lists what each reads). Every rule runs whatever the
 * others find. Amount cells are read as `unknown` and used only when they are INTEGER (bigint):
 * a REAL or TEXT amount is `amounts_are_integers`' to report, never arithmetic here.
 */

export interface InvariantInputs {
  readonly ledgerDatabase: string;
  readonly executorDatabase: string;
  /** The sandbox's `--submissions-log` (JSON lines); null when the run had none. */
  readonly submissionsLog: string | null;
  /** The sandbox's `--jobs-file` (JSON lines, job-journal.ts); null or absent when the run had none. */
  readonly sandboxJobsFile?: string | null;
  readonly artifactRoot: string;
}

export type Rule =
  | 'one_attempt_per_execution'
  | 'one_submission_per_attempt'
  | 'request_id_on_one_attempt'
  | 'attempt_request_id_submitted'
  | 'submissions_source_readable'
  | 'settle_xor_release'
  | 'authorization_status_matches'
  | 'closed_by_claiming_execution'
  | 'claim_has_execution'
  | 'hold_matches_ledger'
  | 'settled_within_hold'
  | 'settled_equals_price_times_delivered'
  | 'settlement_matches_receipt'
  | 'receipt_equals_price_times_billed'
  | 'attempt_amount_matches_receipt'
  | 'resolution_matches_ledger'
  | 'terminal_or_reconciliation'
  | 'reconciliation_has_ledger_record'
  | 'succeeded_has_one_settlement'
  | 'submitted_has_money_record'
  | 'failed_has_release'
  | 'artifacts_intact'
  | 'amounts_are_integers';

export interface Violation {
  readonly rule: Rule;
  readonly subject: string;
  readonly message: string;
}

export interface InvariantReport {
  readonly violations: readonly Violation[];
  readonly counts: {
    readonly executions: number;
    readonly attempts: number;
    readonly submissions: number;
    readonly settlements: number;
    readonly releases: number;
    readonly reconciliations: number;
    readonly artifacts: number;
  };
}

/**
 * Every column that holds an amount, a count of money or a scale, per table, as the migrations
 * have them today. Columns are also found by name (AMOUNT_NAME); this list must still be found,
 * so a renamed column fails loudly instead of silently dropping out of the check.
 */
const AMOUNT_COLUMNS: Readonly<Record<'ledger' | 'executor', Readonly<Record<string, readonly string[]>>>> = {
  ledger: {
    authorizations: ['amount_units', 'amount_cents', 'units_scale'],
    settlements: ['amount_units', 'amount_cents', 'units_scale'],
    policies: ['per_authorization_cap_units', 'daily_cap_units', 'approval_threshold_units', 'units_scale'],
  },
  executor: {
    executions: ['authorization_held_cents', 'authorization_held_units', 'quoted_units', 'units_scale'],
    provider_attempts: ['cost_cents', 'exact_amount', 'scale', 'delivered_images'],
    receipts: ['amount_cents', 'amount_units', 'exact_amount', 'scale', 'units_scale'],
    reconciliation_resolutions: ['images_billed', 'amount_units'],
  },
};
const AMOUNT_NAME = /(^|_)(amount|units|cents|cost|scale|images)(_|$)/;

const MICRO_UNITS_PER_USD = 1_000_000n;

interface ExecutionRow {
  execution_id: string;
  token_id: string;
  state: string;
  state_reason: string | null;
  pricing_snapshot: string;
  currency: string;
  held_units: unknown;
  quoted_units: unknown;
}
interface AttemptRow {
  attempt_id: string;
  execution_id: string;
  state: string;
  request_id: string | null;
  delivered_images: unknown;
  exact_amount: unknown;
  scale: unknown;
}
interface ReceiptRow {
  receipt_id: string;
  execution_id: string;
  amount_units: unknown;
  exact_amount: unknown;
  scale: unknown;
  currency: string;
  ledger_settlement_id: string | null;
  receipt_shape: string | null;
}
interface ArtifactRow {
  artifact_id: string;
  execution_id: string;
  ordinal: unknown;
  size_bytes: unknown;
  sha256: string;
  storage_key: string;
}
interface ResolutionRow {
  execution_id: string;
  resolution: string;
  images_billed: unknown;
  amount_units: unknown;
}
interface AuthorizationRow {
  token_id: string;
  amount_units: unknown;
  currency: string;
  status: string;
  execution_id: string | null;
}
interface SettlementRow {
  settlement_id: string;
  token_id: string;
  execution_id: string;
  receipt_id: string;
  receipt_shape: string;
  amount_units: unknown;
  currency: string;
}
interface ReleaseRow {
  token_id: string;
  execution_id: string | null;
  reason: string;
}
interface RecordRow {
  token_id: string;
  execution_id: string;
  status: string;
  resolution: string | null;
}

/** One submission the provider received, from one of its files. */
interface Submission {
  readonly line: number;
  readonly request_id: string | null;
  readonly model: string;
}
interface SubmissionSource {
  readonly name: string;
  readonly submissions: readonly Submission[];
  /** Line numbers that are not a record of this file's kind. */
  readonly unreadable: readonly number[];
}

function open(path: string): Database.Database {
  // readonly: SQLite refuses every write on this connection. Safe integers: every INTEGER cell
  // comes back as a bigint, so no amount ever passes through a float here.
  const db = new Database(path, { readonly: true, fileMustExist: true });
  db.defaultSafeIntegers(true);
  return db;
}

/** The bigint in an amount cell, or null when it holds anything else. */
function units(value: unknown): bigint | null {
  return typeof value === 'bigint' ? value : null;
}

/** An exact amount at a decimal scale (0…6) in micro-units, or null when it is not one. */
function microUnits(exact: unknown, scale: unknown): bigint | null {
  const amount = units(exact);
  const places = units(scale);
  if (amount === null || places === null || places < 0n || places > 6n) return null;
  return amount * 10n ** (6n - places);
}

/** A JSON whole number as the snapshot stores it: a digit string, or a safe integer. */
function wholeNumber(value: unknown): bigint | null {
  if (typeof value === 'string' && /^(0|[1-9][0-9]*)$/.test(value)) return BigInt(value);
  if (typeof value === 'number' && Number.isSafeInteger(value) && value >= 0) return BigInt(value);
  return null;
}

interface FrozenPrice {
  readonly numerator: bigint;
  readonly denominator: bigint;
  readonly imageCount: bigint;
}

/** The frozen snapshot's rational unit price and image count; null when it has none (a legacy projection, or garbage). */
function frozenPrice(snapshotJson: string): FrozenPrice | null {
  let snapshot: { unit_price?: { numerator?: unknown; denominator?: unknown }; image_count?: unknown; rounding?: unknown };
  try {
    snapshot = JSON.parse(snapshotJson) as typeof snapshot;
  } catch {
    return null;
  }
  const numerator = wholeNumber(snapshot.unit_price?.numerator);
  const denominator = wholeNumber(snapshot.unit_price?.denominator);
  const imageCount = wholeNumber(snapshot.image_count);
  if (numerator === null || denominator === null || denominator === 0n || imageCount === null || snapshot.rounding !== 'ceil_micro_units') return null;
  return { numerator, denominator, imageCount };
}

/** ceil(images × numerator × 10^6 / denominator): the spec's `ceil_micro_units` rounding. */
function priceOf(price: FrozenPrice, images: bigint): bigint {
  const numerator = images * price.numerator * MICRO_UNITS_PER_USD;
  return numerator % price.denominator === 0n ? numerator / price.denominator : numerator / price.denominator + 1n;
}

function modelOf(snapshotJson: string): string | null {
  try {
    const { model } = JSON.parse(snapshotJson) as { model?: unknown };
    return typeof model === 'string' ? model : null;
  } catch {
    return null;
  }
}

function jsonLines(path: string): { text: string; number: number; last: boolean }[] {
  const text = readFileSync(path, 'utf8');
  const lines = text.split('\n');
  return lines.map((line, index) => ({ text: line, number: index + 1, last: index === lines.length - 1 })).filter((line) => line.text.trim() !== '');
}

function parsed(text: string): Record<string, unknown> | null {
  try {
    const value = JSON.parse(text) as unknown;
    return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}

/** The `--submissions-log`: every line one received submission (sandbox-state.ts SubmissionRecord). */
function readSubmissionsLog(path: string): SubmissionSource {
  const submissions: Submission[] = [];
  const unreadable: number[] = [];
  if (existsSync(path)) {
    for (const line of jsonLines(path)) {
      const value = parsed(line.text);
      const requestId = value?.request_id;
      if (
        value !== null &&
        typeof value.sequence === 'number' &&
        (requestId === null || (typeof requestId === 'string' && requestId !== '')) &&
        typeof value.model === 'string' &&
        typeof value.outcome === 'string'
      ) {
        submissions.push({ line: line.number, request_id: requestId, model: value.model });
      } else unreadable.push(line.number);
    }
  }
  return { name: 'submissions log', submissions, unreadable };
}

/** The `--jobs-file`: a `job` line per submission that created a job; `cancel` lines are not submissions. */
function readJobsFile(path: string): SubmissionSource {
  const submissions: Submission[] = [];
  const unreadable: number[] = [];
  if (existsSync(path)) {
    const torn = !readFileSync(path, 'utf8').endsWith('\n');
    for (const line of jsonLines(path)) {
      if (torn && line.last) continue;
      const value = parsed(line.text);
      const requestId = value?.request_id;
      if (value?.type === 'job' && typeof requestId === 'string' && requestId !== '' && typeof value.model === 'string') {
        submissions.push({ line: line.number, request_id: requestId, model: value.model });
      } else if (!(value?.type === 'cancel' && typeof requestId === 'string' && requestId !== '')) unreadable.push(line.number);
    }
  }
  return { name: 'jobs file', submissions, unreadable };
}

/** The artifact file a storage key names, if it stays under the root. */
function artifactFile(root: string, storageKey: string): { found: true; size: number; sha256: string } | { found: false; why: string } {
  const path = resolve(root, storageKey);
  const inside = relative(resolve(root), path);
  if (inside === '' || inside.startsWith('..') || isAbsolute(inside)) return { found: false, why: 'outside the artifact root' };
  if (!existsSync(path)) return { found: false, why: 'missing' };
  const bytes = readFileSync(path);
  return { found: true, size: bytes.byteLength, sha256: createHash('sha256').update(bytes).digest('hex') };
}

/** Both databases open read-only for `read`, closed whatever happens. */
function withDatabases<T>(inputs: InvariantInputs, read: (ledger: Database.Database, executor: Database.Database) => T): T {
  const ledger = open(inputs.ledgerDatabase);
  try {
    const executor = open(inputs.executorDatabase);
    try {
      return read(ledger, executor);
    } finally {
      executor.close();
    }
  } finally {
    ledger.close();
  }
}

function groupBy<T>(rows: readonly T[], key: (row: T) => string | null): Map<string, T[]> {
  const groups = new Map<string, T[]>();
  for (const row of rows) {
    const k = key(row);
    if (k === null) continue;
    const group = groups.get(k);
    if (group === undefined) groups.set(k, [row]);
    else group.push(row);
  }
  return groups;
}

export function checkInvariants(inputs: InvariantInputs): InvariantReport {
  const violations: Violation[] = [];
  const fail = (rule: Rule, subject: string, message: string) => violations.push({ rule, subject, message });
  const quoted = (name: string) => `"${name.replaceAll('"', '""')}"`;

  /** Amounts: INTEGER storage in every amount column (known or found by name), and no REAL anywhere. */
  const checkIntegers = (side: 'ledger' | 'executor', db: Database.Database) => {
    const known = AMOUNT_COLUMNS[side];
    const found = new Set<string>();
    const tables = db.prepare("SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name").pluck().all() as string[];
    for (const table of tables) {
      for (const column of db.prepare('SELECT name FROM pragma_table_info(?)').pluck().all(table) as string[]) {
        const amount = AMOUNT_NAME.test(column) || (known[table]?.includes(column) ?? false);
        if (amount) found.add(`${table}.${column}`);
        const wrong = amount ? `typeof(${quoted(column)}) NOT IN ('integer', 'null')` : `typeof(${quoted(column)}) = 'real'`;
        const rows = db.prepare(`SELECT rowid AS id, typeof(${quoted(column)}) AS kind FROM ${quoted(table)} WHERE ${wrong}`).all() as { id: bigint; kind: string }[];
        for (const row of rows) fail('amounts_are_integers', `${side}.${table}.${column}#${String(row.id)}`, `stored as ${row.kind}`);
      }
    }
    for (const [table, columns] of Object.entries(known)) {
      for (const column of columns) if (!found.has(`${table}.${column}`)) fail('amounts_are_integers', `${side}.${table}.${column}`, 'not in the schema: the checker\'s knowledge of it is stale');
    }
  };

  const all = <T>(db: Database.Database, sql: string) => db.prepare(sql).all() as T[];
  const { fromLedger, fromExecutor } = withDatabases(inputs, (ledger, executor) => ({
    fromLedger: ledger.transaction(() => {
      checkIntegers('ledger', ledger);
      return {
        authorizations: all<AuthorizationRow>(ledger, 'SELECT token_id, amount_units, currency, status, execution_id FROM authorizations'),
        settlements: all<SettlementRow>(ledger, 'SELECT settlement_id, token_id, execution_id, receipt_id, receipt_shape, amount_units, currency FROM settlements'),
        releases: all<ReleaseRow>(ledger, 'SELECT token_id, execution_id, reason FROM releases'),
        records: all<RecordRow>(ledger, 'SELECT token_id, execution_id, status, resolution FROM reconciliation_records'),
      };
    })(),
    fromExecutor: executor.transaction(() => {
      checkIntegers('executor', executor);
      return {
        executions: all<ExecutionRow>(
          executor,
          'SELECT execution_id, spend_auth_token_id AS token_id, state, state_reason, pricing_snapshot, currency, authorization_held_units AS held_units, quoted_units FROM executions',
        ),
        attempts: all<AttemptRow>(executor, 'SELECT attempt_id, execution_id, state, request_id, delivered_images, exact_amount, scale FROM provider_attempts ORDER BY execution_id, attempt_number'),
        receipts: all<ReceiptRow>(executor, 'SELECT receipt_id, execution_id, amount_units, exact_amount, scale, currency, ledger_settlement_id, receipt_shape FROM receipts'),
        artifacts: all<ArtifactRow>(executor, 'SELECT artifact_id, execution_id, ordinal, size_bytes, sha256, storage_key FROM artifacts ORDER BY execution_id, ordinal'),
        resolutions: all<ResolutionRow>(executor, 'SELECT execution_id, resolution, images_billed, amount_units FROM reconciliation_resolutions'),
      };
    })(),
  }));
  const { authorizations, settlements, releases, records } = fromLedger;
  const { executions, attempts, receipts, artifacts, resolutions } = fromExecutor;
  const sources = [
    ...(inputs.submissionsLog === null ? [] : [readSubmissionsLog(inputs.submissionsLog)]),
    ...(inputs.sandboxJobsFile == null ? [] : [readJobsFile(inputs.sandboxJobsFile)]),
  ];

  const executionById = new Map(executions.map((row) => [row.execution_id, row]));
  const authorizationOf = new Map(authorizations.map((row) => [row.token_id, row]));
  const attemptsOf = groupBy(attempts, (row) => row.execution_id);
  const latestAttempt = (executionId: string) => attemptsOf.get(executionId)?.at(-1);
  const receiptOf = new Map(receipts.map((row) => [row.execution_id, row]));
  const resolutionOf = new Map(resolutions.map((row) => [row.execution_id, row]));
  const settlementsOfToken = groupBy(settlements, (row) => row.token_id);
  const releasesOfToken = groupBy(releases, (row) => row.token_id);
  const byExecution = (execution: ExecutionRow) => (row: { token_id: string; execution_id: string | null }) =>
    row.token_id === execution.token_id && row.execution_id === execution.execution_id;

  /**
   * The images an execution is billed for: those its attempt delivered (the executor keeps its
   * receipt for them as soon as they are stored), else — settled by a human before any delivery
   * was recorded — the images the human billed. Null when neither is recorded.
   */
  const billedImages = (executionId: string): bigint | null =>
    units(latestAttempt(executionId)?.delivered_images ?? null) ?? units(resolutionOf.get(executionId)?.images_billed ?? null);

  // ---- What reached the provider -----------------------------------------------------------

  // At most one attempt per execution; a provider request id on at most one attempt.
  for (const [executionId, list] of attemptsOf) if (list.length > 1) fail('one_attempt_per_execution', executionId, `${list.length} provider attempts`);
  for (const [requestId, list] of groupBy(attempts, (row) => row.request_id)) {
    if (list.length > 1) fail('request_id_on_one_attempt', requestId, `on ${list.length} provider attempts (${list.map((row) => row.execution_id).join(', ')})`);
  }
  const known = new Set(attempts.flatMap((attempt) => (attempt.request_id === null ? [] : [attempt.request_id])));
  // An attempt that may have reached the provider without the executor learning its request id.
  const unanswered = attempts.filter((attempt) => attempt.request_id === null && attempt.state !== 'not_transmitted');
  const unansweredByModel = groupBy(unanswered, (attempt) => modelOf(executionById.get(attempt.execution_id)?.pricing_snapshot ?? '') ?? '?');
  for (const source of sources) {
    for (const line of source.unreadable) fail('submissions_source_readable', `${source.name}:${line}`, `line ${line} of the ${source.name} is not a record of it`);
    // At most one submission per request id.
    for (const [requestId, lines] of groupBy(source.submissions, (line) => line.request_id)) {
      if (lines.length > 1) fail('one_submission_per_attempt', requestId, `${lines.length} submissions with one request id (${source.name} lines ${lines.map((line) => line.line).join(', ')})`);
    }
    // A submission whose id the executor never learned (or that created no job) belongs to an
    // attempt that was never answered — and not to one the executor says never left it
    // (`not_transmitted`): if it did, the submissions outnumber the attempts that could have sent
    // them. Counted per model (the snapshot's, the path's).
    const orphans = source.submissions.filter((line) => line.request_id === null || !known.has(line.request_id));
    for (const [model, lines] of groupBy(orphans, (line) => line.model)) {
      const explainable = unansweredByModel.get(model)?.length ?? 0;
      if (lines.length > explainable) {
        fail('one_submission_per_attempt', `${source.name}:${model}`, `${lines.length} submissions of ${model} no attempt accounts for (${source.name} lines ${lines.map((line) => line.line).join(', ')}; ${explainable} attempts never answered)`);
      }
    }
    // Every request id the executor holds was received (and written down before it was answered).
    const received = new Set(source.submissions.map((line) => line.request_id));
    for (const attempt of attempts) {
      if (attempt.request_id !== null && !received.has(attempt.request_id)) fail('attempt_request_id_submitted', attempt.execution_id, `request id ${attempt.request_id} is not in the ${source.name}`);
    }
  }
  const submitted = new Set(sources.flatMap((source) => source.submissions.flatMap((line) => (line.request_id === null ? [] : [line.request_id]))));

  // ---- The ledger's authorizations ---------------------------------------------------------

  // Settle XOR release, once; the status says which; closed by the execution that claimed it.
  for (const [token, list] of settlementsOfToken) {
    if (list.length > 1) fail('settle_xor_release', token, `${list.length} settlements`);
    if (releasesOfToken.has(token)) fail('settle_xor_release', token, 'settled and released');
  }
  for (const [token, list] of releasesOfToken) if (list.length > 1) fail('settle_xor_release', token, `${list.length} releases`);
  for (const authorization of authorizations) {
    const token = authorization.token_id;
    const settled = settlementsOfToken.get(token)?.length ?? 0;
    const released = releasesOfToken.get(token)?.length ?? 0;
    if ((authorization.status === 'settled') !== settled > 0) fail('authorization_status_matches', token, `status ${authorization.status} with ${settled} settlements`);
    if ((authorization.status === 'released') !== released > 0) fail('authorization_status_matches', token, `status ${authorization.status} with ${released} releases`);
  }
  for (const row of [...settlements, ...releases]) {
    const authorization = authorizationOf.get(row.token_id);
    if (authorization === undefined) fail('closed_by_claiming_execution', row.token_id, 'closes an authorization the ledger does not have');
    else if (row.execution_id !== null && row.execution_id !== authorization.execution_id) {
      fail('closed_by_claiming_execution', row.token_id, `closed by execution ${row.execution_id}, claimed by ${authorization.execution_id ?? 'none'}`);
    }
  }

  // A claim at the ledger names an execution the executor has: otherwise the hold is stuck, with
  // nothing to run it, settle it or release it (a lost money record).
  const executionIds = new Set(executions.map((execution) => execution.execution_id));
  for (const authorization of authorizations) {
    if (authorization.execution_id !== null && !executionIds.has(authorization.execution_id)) {
      fail('claim_has_execution', authorization.token_id, `claimed for ${authorization.execution_id}, which the executor does not have`);
    }
  }

  // ---- Money ------------------------------------------------------------------------------

  for (const execution of executions) {
    const id = execution.execution_id;
    const authorization = authorizationOf.get(execution.token_id);
    if (authorization === undefined) {
      fail('closed_by_claiming_execution', id, `runs on authorization ${execution.token_id}, which the ledger does not have`);
      continue;
    }
    // The ledger's claim names this execution; the executor holds what the ledger holds.
    if (authorization.execution_id !== id) fail('closed_by_claiming_execution', id, `the ledger's claim of ${execution.token_id} names ${authorization.execution_id ?? 'no execution'}`);
    const hold = units(authorization.amount_units);
    const held = units(execution.held_units);
    if (held !== null && hold !== null && held !== hold) fail('hold_matches_ledger', id, `the executor records a hold of ${held} units, the ledger ${hold}`);
    if (execution.currency !== authorization.currency) fail('hold_matches_ledger', id, `the executor records ${execution.currency}, the ledger holds ${authorization.currency}`);
    const quotedUnits = units(execution.quoted_units);
    if (quotedUnits !== null && hold !== null && quotedUnits > hold) fail('hold_matches_ledger', id, `quoted ${quotedUnits} units over the hold of ${hold}`);
  }

  for (const row of settlements) {
    const amount = units(row.amount_units);
    const authorization = authorizationOf.get(row.token_id);
    const hold = units(authorization?.amount_units ?? null);
    if (amount !== null && (hold === null || amount > hold)) fail('settled_within_hold', row.token_id, `settled ${amount} over the hold ${String(hold ?? 'missing')}`);
    if (authorization !== undefined && authorization.currency !== row.currency) fail('hold_matches_ledger', row.token_id, `settled in ${row.currency}, held in ${authorization.currency}`);

    // What the executor settled is what it kept: its receipt, with the settlement's id on it. (A
    // human may also settle a record at the ledger itself; the executor then still has the
    // execution in reconciliation, and that settlement is held to the hold alone.)
    const execution = executionById.get(row.execution_id);
    if (execution === undefined) {
      fail('settlement_matches_receipt', row.token_id, `settles execution ${row.execution_id}, which the executor does not have`);
      continue;
    }
    if (execution.token_id !== row.token_id) fail('settlement_matches_receipt', row.token_id, `execution ${row.execution_id} runs on authorization ${execution.token_id}`);
    if (execution.state !== 'succeeded') continue;
    const receipt = receiptOf.get(execution.execution_id);
    if (receipt === undefined) {
      fail('settlement_matches_receipt', execution.execution_id, 'settled without a receipt kept by the executor');
      continue;
    }
    if (receipt.receipt_id !== row.receipt_id) fail('settlement_matches_receipt', execution.execution_id, `settled receipt ${row.receipt_id}, the executor kept ${receipt.receipt_id}`);
    const kept = units(receipt.amount_units);
    if (amount !== null && kept !== null && kept !== amount) fail('settlement_matches_receipt', execution.execution_id, `settled ${amount} units, the kept receipt says ${kept}`);
    if (receipt.ledger_settlement_id !== row.settlement_id) {
      fail('settlement_matches_receipt', execution.execution_id, `the receipt records settlement ${receipt.ledger_settlement_id ?? 'none'}, the ledger ${row.settlement_id}`);
    }
  }
  const settlementIds = new Set(settlements.map((row) => row.settlement_id));
  for (const receipt of receipts) {
    if (receipt.ledger_settlement_id !== null && !settlementIds.has(receipt.ledger_settlement_id)) {
      fail('settlement_matches_receipt', receipt.execution_id, `the receipt records settlement ${receipt.ledger_settlement_id}, which the ledger does not have`);
    }
  }

  // Every kept receipt: its exact amount at its scale is its micro-units; a precise one is the
  // frozen price × the images billed; the attempt it bills records the same amount. (A receipt
  // migrated from v4.3 whole cents, scale 2, kept an estimated price only: it is not priced.)
  for (const receipt of receipts) {
    const id = receipt.execution_id;
    const execution = executionById.get(id);
    const amount = units(receipt.amount_units);
    if (amount === null) continue;
    const exact = microUnits(receipt.exact_amount, receipt.scale);
    if (exact !== amount) fail('receipt_equals_price_times_billed', id, `exact amount ${String(receipt.exact_amount)} at scale ${String(receipt.scale)} is not its ${amount} micro-units`);
    if (execution !== undefined && execution.currency !== receipt.currency) fail('receipt_equals_price_times_billed', id, `receipt in ${receipt.currency}, the execution in ${execution.currency}`);
    if (receipt.receipt_shape !== 'legacy_migrated' && execution !== undefined) {
      const price = frozenPrice(execution.pricing_snapshot);
      const images = billedImages(id);
      if (price === null) fail('receipt_equals_price_times_billed', id, 'its frozen pricing snapshot has no unit price to price the receipt by');
      else if (images === null) fail('receipt_equals_price_times_billed', id, 'no delivered or billed image count is recorded');
      else if (amount !== priceOf(price, images)) fail('receipt_equals_price_times_billed', id, `receipt of ${amount} units, price × ${images} images is ${priceOf(price, images)}`);
    }
    const attempt = latestAttempt(id);
    if (attempt !== undefined) {
      const billed = microUnits(attempt.exact_amount, attempt.scale);
      if (billed === null && receipt.receipt_shape === 'precise') fail('attempt_amount_matches_receipt', id, `the attempt it bills records no amount, the receipt ${amount}`);
      else if (billed !== null && billed !== amount) fail('attempt_amount_matches_receipt', id, `the attempt records ${billed} units, the receipt ${amount}`);
    }
  }

  // A human's resolution: recorded with the execution's end, and the ledger closed the same way.
  for (const resolution of resolutions) {
    const id = resolution.execution_id;
    const execution = executionById.get(id);
    if (execution === undefined) {
      fail('resolution_matches_ledger', id, 'resolves an execution the executor does not have');
      continue;
    }
    // (A human may resolve before the executor could park the execution at the ledger: no record then.)
    const record = records.find(byExecution(execution));
    if (record !== undefined && (record.status !== 'resolved' || record.resolution !== resolution.resolution)) {
      fail('resolution_matches_ledger', id, `resolved ${resolution.resolution}; the ledger record is ${`${record.status} ${record.resolution ?? ''}`.trim()}`);
    }
    if (resolution.resolution === 'settled') {
      if (execution.state !== 'succeeded' || execution.state_reason !== 'reconciled_settled') fail('resolution_matches_ledger', id, `settled by a human, but ${execution.state} (${execution.state_reason ?? 'no reason'})`);
      const settlement = settlements.find(byExecution(execution));
      const amount = units(resolution.amount_units);
      if (settlement === undefined) fail('resolution_matches_ledger', id, 'settled by a human, but the ledger has no settlement by it');
      else if (amount === null || units(settlement.amount_units) !== amount) fail('resolution_matches_ledger', id, `the resolution records ${String(resolution.amount_units)} units, the settlement ${String(settlement.amount_units)}`);
      const asked = units(resolution.images_billed);
      const billed = billedImages(id);
      if (asked !== null && billed !== asked) fail('resolution_matches_ledger', id, `the human billed ${asked} images, the receipt bills ${String(billed)}`);
    } else {
      if (execution.state !== 'failed' || execution.state_reason !== 'reconciled_no_charge') fail('resolution_matches_ledger', id, `released by a human, but ${execution.state} (${execution.state_reason ?? 'no reason'})`);
      if (!releases.some((row) => byExecution(execution)(row) && row.reason === 'reconciled_no_charge')) fail('resolution_matches_ledger', id, 'released by a human, but the ledger has no reconciled_no_charge release by it');
      if (resolution.images_billed !== null || resolution.amount_units !== null) fail('resolution_matches_ledger', id, 'released by a human, yet images or an amount are recorded as billed');
    }
  }
  for (const execution of executions) {
    if ((execution.state_reason === 'reconciled_settled' || execution.state_reason === 'reconciled_no_charge') && !resolutionOf.has(execution.execution_id)) {
      fail('resolution_matches_ledger', execution.execution_id, `${execution.state_reason}, but no human resolution is recorded`);
    }
  }

  // ---- Every execution's end --------------------------------------------------------------

  const artifactsOf = groupBy(artifacts, (row) => row.execution_id);
  for (const execution of executions) {
    const id = execution.execution_id;
    const settledHere = settlements.filter((row) => row.execution_id === id);
    const attempt = latestAttempt(id);
    if (!['succeeded', 'failed', 'reconciliation'].includes(execution.state)) fail('terminal_or_reconciliation', id, `state ${execution.state}`);
    if (execution.state === 'reconciliation' && !records.some(byExecution(execution))) {
      fail('reconciliation_has_ledger_record', id, 'no reconciliation record at the ledger');
    }
    if (execution.state === 'succeeded') {
      if (settledHere.length !== 1) fail('succeeded_has_one_settlement', id, `${settledHere.length} settlements by this execution`);
      const receipt = receiptOf.get(id);
      const price = frozenPrice(execution.pricing_snapshot);
      const images = billedImages(id);
      for (const row of settledHere) {
        const amount = units(row.amount_units);
        // A legacy receipt kept only an estimated price, not a unit price: held to the hold alone.
        if (amount === null || row.receipt_shape === 'legacy_cents' || receipt?.receipt_shape === 'legacy_migrated') continue;
        if (price === null) fail('settled_equals_price_times_delivered', id, 'its frozen pricing snapshot has no unit price to price the settlement by');
        else if (images === null) fail('settled_equals_price_times_delivered', id, 'settled, but no delivered or billed image count is recorded');
        else if (images < 1n || images > price.imageCount) fail('settled_equals_price_times_delivered', id, `${images} images billed of ${price.imageCount} asked`);
        else if (amount !== priceOf(price, images)) fail('settled_equals_price_times_delivered', id, `settled ${amount}, price × ${images} images is ${priceOf(price, images)}`);
      }
      // Exactly the images delivered are kept, ordinals 0…n-1. Settled by a human before the
      // delivery finished, no count was recorded: what was stored must still be intact (below).
      const files = artifactsOf.get(id) ?? [];
      const delivered = units(attempt?.delivered_images ?? null);
      if (delivered === null) {
        if (execution.state_reason !== 'reconciled_settled') fail('artifacts_intact', id, 'succeeded, but no delivered images are recorded');
      } else if (BigInt(files.length) !== delivered) fail('artifacts_intact', id, `${files.length} artifacts recorded, ${delivered} images delivered`);
      const ordinals = files.map((file) => units(file.ordinal));
      if (!ordinals.every((ordinal, index) => ordinal === BigInt(index))) fail('artifacts_intact', id, `artifact ordinals ${ordinals.map(String).join(',')} are not 0…${files.length - 1}`);
    }
    // Whatever reached (or may have reached) the provider has its money at the ledger: settled,
    // parked for reconciliation, or released by a human's reconciliation — never a plain
    // release, which says the submission never left.
    const reached = (attempt !== undefined && attempt.state !== 'not_transmitted') || (attemptsOf.get(id) ?? []).some((row) => row.request_id !== null && submitted.has(row.request_id));
    if (reached) {
      const token = execution.token_id;
      const released = releasesOfToken.get(token) ?? [];
      const recorded = settlementsOfToken.has(token) || records.some((row) => row.token_id === token) || released.some((row) => row.reason === 'reconciled_no_charge');
      if (!recorded) {
        fail(
          'submitted_has_money_record',
          id,
          released.length > 0
            ? `released as ${released.map((row) => row.reason).join(', ')} without reconciliation although its submission reached the provider`
            : 'its submission reached the provider but the ledger holds no settlement, release or reconciliation record',
        );
      }
    }
    // A failed execution charged nothing: its hold is released, by it.
    if (execution.state === 'failed' && !releases.some(byExecution(execution))) fail('failed_has_release', id, 'failed, but its authorization was not released by it');
  }

  // Every artifact row's file is under the root with its recorded size and sha256.
  for (const artifact of artifacts) {
    const file = artifactFile(inputs.artifactRoot, artifact.storage_key);
    const id = artifact.execution_id;
    if (!file.found) fail('artifacts_intact', id, `${artifact.storage_key}: ${file.why}`);
    else if (file.sha256 !== artifact.sha256) fail('artifacts_intact', id, `${artifact.storage_key} does not match its sha256`);
    else if (units(artifact.size_bytes) !== BigInt(file.size)) fail('artifacts_intact', id, `${artifact.storage_key}: ${file.size} bytes on disk, ${String(artifact.size_bytes)} recorded`);
  }

  const primary = sources[0];
  return {
    violations,
    counts: {
      executions: executions.length,
      attempts: attempts.length,
      submissions: primary?.submissions.filter((line) => line.request_id !== null).length ?? 0,
      settlements: settlements.length,
      releases: releases.length,
      reconciliations: records.length,
      artifacts: artifacts.length,
    },
  };
}
